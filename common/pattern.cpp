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
  bool in_class = false;          // inside [...], where quantifier characters are literal
  bool after_quantifier = false;  // the previous token was a quantifier
  std::size_t product = 1;        // of every repeat count, capped
  const auto digits = [&](std::size_t& j) {
    std::size_t n = 0;
    for (; j < pattern.size() && pattern[j] >= '0' && pattern[j] <= '9'; ++j) {
      n = std::min<std::size_t>(n * 10 + static_cast<std::size_t>(pattern[j] - '0'),
                                kMaxPatternRepeat + 1);
    }
    return n;
  };
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    const bool quantifier_now = after_quantifier;
    after_quantifier = false;
    if (c == '\\') {
      // A back-reference (\1...) reads every digit that follows, like a
      // repeat count.
      std::size_t j = i + 1;
      const std::size_t number = j < pattern.size() && pattern[j] != '0' ? digits(j) : 0;
      if (number > kMaxPatternRepeat) {
        return "a back-reference above the " + std::to_string(kMaxPatternRepeat) + " allowed";
      }
      ++i;  // an escaped character opens nothing
    } else if (in_class) {
      if (c == ']') {
        in_class = false;
        --depth;
      }
    } else if (c == '(' || c == '[') {
      deepest = std::max(deepest, ++depth);
      in_class = c == '[';
    } else if (c == ')' && depth > 0) {
      --depth;
    } else if (c == '*' || c == '+' ||
               (c == '{' && i + 1 < pattern.size() && pattern[i + 1] >= '0' &&
                pattern[i + 1] <= '9')) {
      // A quantifier of a quantifier (a+*, a{2}{3}) nests loops that the
      // engine explores one path at a time.
      if (quantifier_now) return "a quantifier applied to a quantifier (such as a+* or a{2}{3})";
      after_quantifier = true;
      if (c == '{') {
        // Every count in the braces, capped before it can overflow; the
        // engine builds a state per repetition, so the counts multiply.
        std::size_t j = i + 1;
        std::size_t most = 0;
        while (j < pattern.size() &&
               (pattern[j] == ',' || (pattern[j] >= '0' && pattern[j] <= '9'))) {
          const std::size_t count = digits(j);
          if (count > kMaxPatternRepeat) {
            return "a repeat count above the " + std::to_string(kMaxPatternRepeat) + " allowed";
          }
          most = std::max(most, count);
          if (j < pattern.size() && pattern[j] == ',') ++j;
        }
        product =
            std::min<std::size_t>(product * std::max<std::size_t>(most, 1), kMaxPatternRepeat + 1);
        if (product > kMaxPatternRepeat) {
          return "repeat counts that multiply to more than the " +
                 std::to_string(kMaxPatternRepeat) + " allowed";
        }
        i = j;  // the closing brace
      }
    } else if (c == '?') {
      after_quantifier = true;  // a? quantifies; a+? is a lazy a+
    }
  }
  if (deepest > kMaxPatternNesting) {
    return "groups nested " + std::to_string(deepest) + " deep, more than the " +
           std::to_string(kMaxPatternNesting) + " allowed";
  }
  return {};
}

}  // namespace rdma_exporter
