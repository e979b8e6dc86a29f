#pragma once

#include <prometheus/metric_family.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rdma_exporter {

// What an OTLP export request carries besides the metric families.
struct OtlpEncodeContext {
  // Resource attributes in order; keys are unique.
  std::vector<std::pair<std::string, std::string>> resource_attributes;
  std::string scope_name = "rdma_exporter";
  std::string scope_version;
  // Start of the cumulative series (the exporter's start); the same for every
  // push of one process. Set on sums, histograms and summaries, not gauges.
  uint64_t start_time_unix_nano = 0;
  // When the values were collected.
  uint64_t time_unix_nano = 0;
};

// An opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest
// holding every family: counters as monotonic cumulative Sums, gauges and
// untyped as Gauges, histograms as cumulative Histograms (explicit bounds,
// per-bucket counts), summaries as Summaries. Names and units follow
// otlp_metric_name(); labels become string attributes. A number is sent as
// as_int when it is integral and fits in int64 (except in gauges with unit
// "s"), else as as_double. Families without samples are left out.
std::string encode_otlp_protobuf(const std::vector<prometheus::MetricFamily>& families,
                                 const OtlpEncodeContext& context);

// The same request in the OTLP/JSON mapping: lowerCamelCase keys, 64-bit
// integers as decimal strings, enums as numbers, non-finite doubles as
// "NaN", "Infinity", "-Infinity".
std::string encode_otlp_json(const std::vector<prometheus::MetricFamily>& families,
                             const OtlpEncodeContext& context);

}  // namespace rdma_exporter
