#pragma once

// The Prometheus text exposition format 0.0.4, served on /metrics.

#include <prometheus/metric_family.h>

#include <string>
#include <vector>

namespace rdma_exporter {

inline constexpr const char* kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string render_text(const std::vector<prometheus::MetricFamily>& families);

}  // namespace rdma_exporter
