#pragma once

// OpenMetrics 1.0 text, for `--once --format openmetrics`.

#include <prometheus/metric_family.h>

#include <string>
#include <vector>

namespace rdma_exporter {

// Counter families named without `_total`, their samples with it; histograms
// always end with a +Inf bucket; `# EOF` at the end.
std::string render_openmetrics(const std::vector<prometheus::MetricFamily>& families);

}  // namespace rdma_exporter
