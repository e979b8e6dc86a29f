#include "common/pattern.hpp"

#include <algorithm>

namespace rdma_exporter {

std::string pattern_limit_problem(const std::string& pattern) {
  if (pattern.size() > kMaxPatternBytes) {
    return "a pattern of " + std::to_string(pattern.size()) + " bytes, more than the " +
           std::to_string(kMaxPatternBytes) + " allowed";
  }
  std::size_t depth = 0;
  std::size_t deepest = 0;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      ++i;  // an escaped character opens nothing
    } else if (c == '(' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ')' || c == ']') && depth > 0) {
      --depth;
    }
  }
  if (deepest > kMaxPatternNesting) {
    return "groups nested " + std::to_string(deepest) + " deep, more than the " +
           std::to_string(kMaxPatternNesting) + " allowed";
  }
  return {};
}

}  // namespace rdma_exporter
