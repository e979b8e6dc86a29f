#pragma once

// Waiting in tests for what the code under test gives no notification of
// (a self metric reaching a value): polling with a generous deadline, never
// a fixed sleep.

#include <chrono>
#include <thread>

namespace rdma_exporter::testing {

// True as soon as `condition()` holds; false when `timeout` passes first.
template <typename Condition>
bool eventually(Condition condition,
                std::chrono::steady_clock::duration timeout = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace rdma_exporter::testing
