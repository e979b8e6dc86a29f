#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/pattern.hpp"

namespace rdma_exporter {

// The first of `rules` (each with `port`, 0 for every port) whose compiled
// device pattern matches the whole device name; nullptr when none does.
// `patterns[i]` is rules[i].device compiled.
template <typename Rule>
const Rule* first_matching_rule(const std::vector<Rule>& rules,
                                const std::vector<Pattern>& patterns, const std::string& device,
                                uint32_t port) {
  for (std::size_t i = 0; i < rules.size() && i < patterns.size(); ++i) {
    const Rule& r = rules[i];
    if ((r.port == 0 || r.port == port) && patterns[i].matches(device)) return &r;
  }
  return nullptr;
}

}  // namespace rdma_exporter
