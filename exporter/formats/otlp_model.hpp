#pragma once

// The OTLP view of the metric families, built by one walk over them and
// written out by either encoding (otlp_protobuf.hpp, otlp_json.hpp). The walk
// makes every mapping decision once:
// - names and units follow otlp_metric_name();
// - counters become monotonic cumulative Sums, gauges and untyped Gauges,
//   histograms cumulative Histograms (explicit bounds, per-bucket counts),
//   summaries Summaries; families without samples are left out;
// - labels become string attributes;
// - every point has the collection time; all but gauge points also have
//   the start of the cumulative series;
// - a number is an integer when it is integral and fits in int64 (except
//   in gauges with unit "s", which stay doubles), else a double.
// A request points into the families and the context it was built from and
// must not outlive them.

#include <prometheus/metric_family.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
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

// AGGREGATION_TEMPORALITY_CUMULATIVE, the temporality of every Sum and
// Histogram sent; both encodings write enums as numbers.
inline constexpr uint64_t kOtlpCumulative = 2;

using OtlpAttributes = std::span<const prometheus::ClientMetric::Label>;

// What every data point has.
struct OtlpPoint {
  OtlpAttributes attributes;
  std::optional<uint64_t> start_time_unix_nano;  // absent on gauge points
  uint64_t time_unix_nano = 0;
};

// as_int or as_double.
using OtlpNumber = std::variant<int64_t, double>;

struct OtlpNumberPoint : OtlpPoint {
  OtlpNumber value;
};

struct OtlpHistogramPoint : OtlpPoint {
  uint64_t count = 0;
  double sum = 0;
  std::vector<uint64_t> bucket_counts;  // one per bound, then the one above the last
  std::vector<double> explicit_bounds;  // finite, strictly increasing
};

struct OtlpSummaryPoint : OtlpPoint {
  uint64_t count = 0;
  double sum = 0;
  std::span<const prometheus::ClientMetric::Quantile> quantiles;
};

struct OtlpGauge {
  std::vector<OtlpNumberPoint> points;
};
struct OtlpSum {  // monotonic, cumulative
  std::vector<OtlpNumberPoint> points;
};
struct OtlpHistogram {  // cumulative
  std::vector<OtlpHistogramPoint> points;
};
struct OtlpSummary {
  std::vector<OtlpSummaryPoint> points;
};

struct OtlpMetric {
  std::string name;
  std::string_view description;  // empty: none
  std::string unit;
  std::variant<OtlpGauge, OtlpSum, OtlpHistogram, OtlpSummary> data;
};

// An ExportMetricsServiceRequest with one resource and one scope.
struct OtlpRequest {
  std::span<const std::pair<std::string, std::string>> resource_attributes;
  std::string_view scope_name;
  std::string_view scope_version;  // empty: none
  std::vector<OtlpMetric> metrics;
};

OtlpRequest otlp_request(const std::vector<prometheus::MetricFamily>& families,
                         const OtlpEncodeContext& context);

}  // namespace rdma_exporter
