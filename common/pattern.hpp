#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace re2 {
class RE2;
}

namespace rdma_exporter {

// Limits on the regular expressions a configuration may hold (device, comm,
// cgroup, driver and ethtool statistic patterns). RE2 matches in time linear
// in the name whatever the pattern, and parses and compiles without
// recursion; the limits keep a pattern's compiled program small.
inline constexpr std::size_t kMaxPatternBytes = 1024;
// A repeat count ({n}, {n,}, {n,m}); nested repeats multiply, and their
// product may not exceed it either (RE2's own limit, the same number).
inline constexpr std::size_t kMaxPatternRepeat = 1000;

// "" when `pattern` is within the limits, else what is wrong. It does not
// compile the pattern: Pattern::compile does, and says whether its syntax is
// valid.
std::string pattern_limit_problem(const std::string& pattern);

// A configuration pattern: RE2 syntax, matched against a whole name (as if
// written ^(?:pattern)$), byte by byte (a kernel name need not be UTF-8, so
// `.` is one byte). Back-references (\1 to \9) do not exist in RE2 and are
// refused. Copies share the compiled form, which is safe to match from
// several threads at once.
class Pattern {
 public:
  // Matches every name: ".*".
  Pattern();

  // Checks the limits, then compiles. The error (EINVAL) says what is
  // wrong, without repeating the pattern.
  static Result<Pattern> compile(const std::string& pattern);
  // A pattern the configuration has checked already; should it not compile
  // after all, it matches nothing.
  static Pattern checked(const std::string& pattern);

  // True when the whole of `name` matches.
  bool matches(std::string_view name) const;
  // The same, and the text of the first capture group ("" when the pattern
  // has none or the group took no part in the match).
  bool matches(std::string_view name, std::string& first_group) const;

  int capture_groups() const;
  const std::string& text() const;

 private:
  explicit Pattern(std::shared_ptr<const re2::RE2> re) : re_(std::move(re)) {}
  std::shared_ptr<const re2::RE2> re_;
};

}  // namespace rdma_exporter
