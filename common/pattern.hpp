#pragma once

#include <cstddef>
#include <string>

namespace rdma_exporter {

// Limits on the regular expressions a configuration may hold (device, comm,
// cgroup and ethtool statistic patterns). std::regex compiles and matches by
// recursion, so a deeply nested pattern overflows the stack: a configuration
// file, or a reload, must never take the daemon down that way.
inline constexpr std::size_t kMaxPatternBytes = 1024;
inline constexpr std::size_t kMaxPatternNesting = 32;  // groups and classes inside each other
// A repeat count ({n}, {n,}, {n,m}) or back-reference number (\n): std::regex
// builds one state per repetition, and overflows a signed integer reading a
// number of 19 digits. The counts of a pattern may multiply to at most this,
// and a quantifier may not quantify another (a+*, a{2}{3}).
inline constexpr std::size_t kMaxPatternRepeat = 1000;

// "" when `pattern` is within the limits, else what is wrong. It does not
// compile the pattern: std::regex then says whether its syntax is valid.
std::string pattern_limit_problem(const std::string& pattern);

}  // namespace rdma_exporter
