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
      // A back-reference (\1...) reads every digit that follows, like a
      // repeat count.
      std::size_t j = i + 1;
      std::size_t number = 0;
      for (; j < pattern.size() && pattern[j] >= '0' && pattern[j] <= '9' && pattern[i + 1] != '0';
           ++j) {
        number = std::min<std::size_t>(number * 10 + static_cast<std::size_t>(pattern[j] - '0'),
                                       kMaxPatternRepeat + 1);
      }
      if (number > kMaxPatternRepeat) {
        return "a back-reference above the " + std::to_string(kMaxPatternRepeat) + " allowed";
      }
      ++i;  // an escaped character opens nothing
    } else if (c == '(' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ')' || c == ']') && depth > 0) {
      --depth;
    } else if (c == '{') {
      // Every count in the braces, digit by digit, capped before it can
      // overflow.
      std::size_t j = i + 1;
      while (j < pattern.size() &&
             (pattern[j] == ',' || (pattern[j] >= '0' && pattern[j] <= '9'))) {
        std::size_t count = 0;
        for (; j < pattern.size() && pattern[j] >= '0' && pattern[j] <= '9'; ++j) {
          count = std::min<std::size_t>(count * 10 + static_cast<std::size_t>(pattern[j] - '0'),
                                        kMaxPatternRepeat + 1);
        }
        if (count > kMaxPatternRepeat) {
          return "a repeat count above the " + std::to_string(kMaxPatternRepeat) + " allowed";
        }
        if (j < pattern.size() && pattern[j] == ',') ++j;
      }
    }
  }
  if (deepest > kMaxPatternNesting) {
    return "groups nested " + std::to_string(deepest) + " deep, more than the " +
           std::to_string(kMaxPatternNesting) + " allowed";
  }
  return {};
}

}  // namespace rdma_exporter
