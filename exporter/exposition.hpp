#pragma once

#include <prometheus/metric_family.h>

#include <string>
#include <string_view>
#include <vector>

namespace rdma_exporter {

inline constexpr const char* kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

// Prometheus text exposition format 0.0.4.
std::string render_text(const std::vector<prometheus::MetricFamily>& families);

// A gzip member (RFC 1952) holding `data`.
std::string gzip_compress(std::string_view data);

}  // namespace rdma_exporter
