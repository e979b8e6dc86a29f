#pragma once

// A stall watch for the probers' tests: one stall that covers the whole
// test, so every probe a prober makes is touched by it.

#include <chrono>
#include <memory>

#include "exporter/probe/stats/stalls.hpp"

namespace rdma_exporter::testing {

// One stall, from an hour ago to an hour on.
inline std::shared_ptr<probe::StallWatch> stalled_throughout() {
  auto watch = std::make_shared<probe::StallWatch>();
  const auto now = std::chrono::steady_clock::now();
  watch->armed(now - std::chrono::hours(1), now - std::chrono::hours(1) + probe::kHeartbeat);
  watch->check(now + std::chrono::hours(1));
  return watch;
}

}  // namespace rdma_exporter::testing
