#pragma once

// The JSON document of `--once --format json` (schema "rdma_exporter/v1",
// described in docs/configuration.md).

#include <prometheus/metric_family.h>

#include <string>
#include <vector>

namespace rdma_exporter {

struct CollectorOutcome;

// The collectors' outcomes and every sample: counters, gauges and untyped
// with a "value", histograms with "count", "sum" and cumulative "buckets".
// Values that are not finite are the strings "NaN", "+Inf", "-Inf".
std::string render_json(const std::vector<prometheus::MetricFamily>& families,
                        const std::vector<CollectorOutcome>& outcomes, double timestamp_seconds);

}  // namespace rdma_exporter
