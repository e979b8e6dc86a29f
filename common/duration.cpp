#include "common/duration.hpp"

#include <cctype>
#include <charconv>

namespace rdma_exporter {
namespace {

// About 34 years: longer than any timeout or interval means.
constexpr long long kMaxDurationMs = 1LL << 40;

}  // namespace

bool parse_duration(const std::string& text, Duration& out) {
  if (text.empty()) return false;
  long long total_ms = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    long long number = 0;
    auto [p, ec] = std::from_chars(text.data() + i, text.data() + text.size(), number);
    if (ec != std::errc() || number < 0) return false;
    i = static_cast<std::size_t>(p - text.data());
    std::size_t unit_end = i;
    while (unit_end < text.size() && std::isalpha(static_cast<unsigned char>(text[unit_end]))) {
      ++unit_end;
    }
    const std::string unit = text.substr(i, unit_end - i);
    long long scale = 0;
    if (unit == "ms")
      scale = 1;
    else if (unit == "s")
      scale = 1000;
    else if (unit == "m")
      scale = 60'000;
    else if (unit == "h")
      scale = 3'600'000;
    else
      return false;
    // Each term and the running total stay within kMaxDurationMs, so nothing
    // overflows, here or where a timer adds the duration to a clock.
    if (number > kMaxDurationMs / scale) return false;
    total_ms += number * scale;
    if (total_ms > kMaxDurationMs) return false;
    i = unit_end;
  }
  out = Duration(total_ms);
  return true;
}

}  // namespace rdma_exporter
