#include "exporter/formats/otlp_protobuf.hpp"

#include "exporter/formats/protobuf_writer.hpp"

namespace rdma_exporter {
namespace {

// Field numbers of opentelemetry-proto v1 (collector/metrics/v1,
// metrics/v1, resource/v1, common/v1).
namespace pb {
constexpr uint32_t kRequestResourceMetrics = 1;
constexpr uint32_t kResourceMetricsResource = 1;
constexpr uint32_t kResourceMetricsScopeMetrics = 2;
constexpr uint32_t kResourceAttributes = 1;
constexpr uint32_t kScopeMetricsScope = 1;
constexpr uint32_t kScopeMetricsMetrics = 2;
constexpr uint32_t kScopeName = 1;
constexpr uint32_t kScopeVersion = 2;
constexpr uint32_t kKeyValueKey = 1;
constexpr uint32_t kKeyValueValue = 2;
constexpr uint32_t kAnyValueString = 1;
constexpr uint32_t kMetricName = 1;
constexpr uint32_t kMetricDescription = 2;
constexpr uint32_t kMetricUnit = 3;
constexpr uint32_t kMetricGauge = 5;
constexpr uint32_t kMetricSum = 7;
constexpr uint32_t kMetricHistogram = 9;
constexpr uint32_t kMetricSummary = 11;
constexpr uint32_t kDataPoints = 1;              // Gauge, Sum, Histogram, Summary
constexpr uint32_t kAggregationTemporality = 2;  // Sum, Histogram
constexpr uint32_t kSumIsMonotonic = 3;
constexpr uint32_t kPointStartTime = 2;  // every data point
constexpr uint32_t kPointTime = 3;
constexpr uint32_t kNumberAsDouble = 4;
constexpr uint32_t kNumberAsInt = 6;
constexpr uint32_t kNumberAttributes = 7;
constexpr uint32_t kHistogramCount = 4;
constexpr uint32_t kHistogramSum = 5;
constexpr uint32_t kHistogramBucketCounts = 6;
constexpr uint32_t kHistogramExplicitBounds = 7;
constexpr uint32_t kHistogramAttributes = 9;
constexpr uint32_t kSummaryCount = 4;
constexpr uint32_t kSummarySum = 5;
constexpr uint32_t kSummaryQuantileValues = 6;
constexpr uint32_t kSummaryAttributes = 7;
constexpr uint32_t kQuantileQuantile = 1;
constexpr uint32_t kQuantileValue = 2;
}  // namespace pb

void attribute(ProtobufWriter& w, uint32_t field, std::string_view key, std::string_view value) {
  w.begin(field);
  w.string_field(pb::kKeyValueKey, key);
  w.begin(pb::kKeyValueValue);
  w.string_field(pb::kAnyValueString, value);
  w.end();
  w.end();
}

void attributes(ProtobufWriter& w, uint32_t field, OtlpAttributes labels) {
  for (const auto& l : labels) attribute(w, field, l.name, l.value);
}

void times(ProtobufWriter& w, const OtlpPoint& p) {
  if (p.start_time_unix_nano) w.fixed64_field(pb::kPointStartTime, *p.start_time_unix_nano);
  w.fixed64_field(pb::kPointTime, p.time_unix_nano);
}

void number_points(ProtobufWriter& w, const std::vector<OtlpNumberPoint>& points) {
  for (const auto& p : points) {
    w.begin(pb::kDataPoints);
    times(w, p);
    if (const auto* i = std::get_if<int64_t>(&p.value)) {
      w.sfixed64_field(pb::kNumberAsInt, *i);
    } else {
      w.double_field(pb::kNumberAsDouble, std::get<double>(p.value));
    }
    attributes(w, pb::kNumberAttributes, p.attributes);
    w.end();
  }
}

void histogram_points(ProtobufWriter& w, const std::vector<OtlpHistogramPoint>& points) {
  for (const auto& p : points) {
    w.begin(pb::kDataPoints);
    times(w, p);
    w.fixed64_field(pb::kHistogramCount, p.count);
    w.double_field(pb::kHistogramSum, p.sum);
    w.packed_fixed64(pb::kHistogramBucketCounts, p.bucket_counts);
    if (!p.explicit_bounds.empty())
      w.packed_double(pb::kHistogramExplicitBounds, p.explicit_bounds);
    attributes(w, pb::kHistogramAttributes, p.attributes);
    w.end();
  }
}

void summary_points(ProtobufWriter& w, const std::vector<OtlpSummaryPoint>& points) {
  for (const auto& p : points) {
    w.begin(pb::kDataPoints);
    times(w, p);
    w.fixed64_field(pb::kSummaryCount, p.count);
    w.double_field(pb::kSummarySum, p.sum);
    for (const auto& q : p.quantiles) {
      w.begin(pb::kSummaryQuantileValues);
      w.double_field(pb::kQuantileQuantile, q.quantile);
      w.double_field(pb::kQuantileValue, q.value);
      w.end();
    }
    attributes(w, pb::kSummaryAttributes, p.attributes);
    w.end();
  }
}

void metric(ProtobufWriter& w, const OtlpMetric& m) {
  w.begin(pb::kScopeMetricsMetrics);
  w.string_field(pb::kMetricName, m.name);
  if (!m.description.empty()) w.string_field(pb::kMetricDescription, m.description);
  w.string_field(pb::kMetricUnit, m.unit);
  if (const auto* gauge = std::get_if<OtlpGauge>(&m.data)) {
    w.begin(pb::kMetricGauge);
    number_points(w, gauge->points);
    w.end();
  } else if (const auto* sum = std::get_if<OtlpSum>(&m.data)) {
    w.begin(pb::kMetricSum);
    number_points(w, sum->points);
    w.varint_field(pb::kAggregationTemporality, kOtlpCumulative);
    w.varint_field(pb::kSumIsMonotonic, 1);
    w.end();
  } else if (const auto* histogram = std::get_if<OtlpHistogram>(&m.data)) {
    w.begin(pb::kMetricHistogram);
    histogram_points(w, histogram->points);
    w.varint_field(pb::kAggregationTemporality, kOtlpCumulative);
    w.end();
  } else if (const auto* summary = std::get_if<OtlpSummary>(&m.data)) {
    w.begin(pb::kMetricSummary);
    summary_points(w, summary->points);
    w.end();
  }
  w.end();
}

}  // namespace

std::string encode_otlp_protobuf(const OtlpRequest& request) {
  ProtobufWriter w;
  w.begin(pb::kRequestResourceMetrics);
  w.begin(pb::kResourceMetricsResource);
  for (const auto& [key, value] : request.resource_attributes) {
    attribute(w, pb::kResourceAttributes, key, value);
  }
  w.end();
  w.begin(pb::kResourceMetricsScopeMetrics);
  w.begin(pb::kScopeMetricsScope);
  w.string_field(pb::kScopeName, request.scope_name);
  if (!request.scope_version.empty()) w.string_field(pb::kScopeVersion, request.scope_version);
  w.end();
  for (const auto& m : request.metrics) metric(w, m);
  w.end();
  w.end();
  return w.take();
}

std::string encode_otlp_protobuf(const std::vector<prometheus::MetricFamily>& families,
                                 const OtlpEncodeContext& context) {
  return encode_otlp_protobuf(otlp_request(families, context));
}

}  // namespace rdma_exporter
