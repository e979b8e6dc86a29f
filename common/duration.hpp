#pragma once

#include <chrono>
#include <string>

namespace rdma_exporter {

using Duration = std::chrono::milliseconds;

// "10s", "500ms", "1m30s", "2h" -> milliseconds; false when malformed or
// longer than 2^40 ms (about 34 years).
bool parse_duration(const std::string& text, Duration& out);

}  // namespace rdma_exporter
