#include "exporter/formats/otlp_json.hpp"

#include "common/json_writer.hpp"

namespace rdma_exporter {
namespace {

// 64-bit integers are strings in OTLP/JSON.
void uint64_string(JsonWriter& w, uint64_t v) {
  w.string(std::to_string(v));
}

void attribute(JsonWriter& w, std::string_view key, std::string_view value) {
  w.begin_object();
  w.key("key");
  w.string(key);
  w.key("value");
  w.begin_object();
  w.key("stringValue");
  w.string(value);
  w.end_object();
  w.end_object();
}

// The attributes and times every point starts with.
void point_fields(JsonWriter& w, const OtlpPoint& p) {
  w.key("attributes");
  w.begin_array();
  for (const auto& l : p.attributes) attribute(w, l.name, l.value);
  w.end_array();
  if (p.start_time_unix_nano) {
    w.key("startTimeUnixNano");
    uint64_string(w, *p.start_time_unix_nano);
  }
  w.key("timeUnixNano");
  uint64_string(w, p.time_unix_nano);
}

void point(JsonWriter& w, const OtlpNumberPoint& p) {
  w.begin_object();
  point_fields(w, p);
  if (const auto* i = std::get_if<int64_t>(&p.value)) {
    w.key("asInt");
    w.string(std::to_string(*i));
  } else {
    w.key("asDouble");
    w.number(std::get<double>(p.value));
  }
  w.end_object();
}

// What histogram and summary points start with: the attributes, times,
// count and sum.
template <typename Point>
void distribution_fields(JsonWriter& w, const Point& p) {
  point_fields(w, p);
  w.key("count");
  uint64_string(w, p.count);
  w.key("sum");
  w.number(p.sum);
}

void point(JsonWriter& w, const OtlpHistogramPoint& p) {
  w.begin_object();
  distribution_fields(w, p);
  w.key("bucketCounts");
  w.begin_array();
  for (uint64_t c : p.bucket_counts) uint64_string(w, c);
  w.end_array();
  w.key("explicitBounds");
  w.begin_array();
  for (double bound : p.explicit_bounds) w.number(bound);
  w.end_array();
  w.end_object();
}

void point(JsonWriter& w, const OtlpSummaryPoint& p) {
  w.begin_object();
  distribution_fields(w, p);
  w.key("quantileValues");
  w.begin_array();
  for (const auto& q : p.quantiles) {
    w.begin_object();
    w.key("quantile");
    w.number(q.quantile);
    w.key("value");
    w.number(q.value);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

template <typename Points>
void data_points(JsonWriter& w, const Points& points) {
  w.key("dataPoints");
  w.begin_array();
  for (const auto& p : points) point(w, p);
  w.end_array();
}

void cumulative(JsonWriter& w) {
  w.key("aggregationTemporality");
  w.integer(kOtlpCumulative);
}

void metric(JsonWriter& w, const OtlpMetric& m) {
  w.begin_object();
  w.key("name");
  w.string(m.name);
  if (!m.description.empty()) {
    w.key("description");
    w.string(m.description);
  }
  w.key("unit");
  w.string(m.unit);
  if (const auto* gauge = std::get_if<OtlpGauge>(&m.data)) {
    w.key("gauge");
    w.begin_object();
    data_points(w, gauge->points);
    w.end_object();
  } else if (const auto* sum = std::get_if<OtlpSum>(&m.data)) {
    w.key("sum");
    w.begin_object();
    data_points(w, sum->points);
    cumulative(w);
    w.key("isMonotonic");
    w.boolean(true);
    w.end_object();
  } else if (const auto* histogram = std::get_if<OtlpHistogram>(&m.data)) {
    w.key("histogram");
    w.begin_object();
    data_points(w, histogram->points);
    cumulative(w);
    w.end_object();
  } else if (const auto* summary = std::get_if<OtlpSummary>(&m.data)) {
    w.key("summary");
    w.begin_object();
    data_points(w, summary->points);
    w.end_object();
  }
  w.end_object();
}

}  // namespace

std::string encode_otlp_json(const OtlpRequest& request) {
  JsonWriter w;
  w.begin_object();
  w.key("resourceMetrics");
  w.begin_array();
  w.begin_object();
  w.key("resource");
  w.begin_object();
  w.key("attributes");
  w.begin_array();
  for (const auto& [key, value] : request.resource_attributes) attribute(w, key, value);
  w.end_array();
  w.end_object();
  w.key("scopeMetrics");
  w.begin_array();
  w.begin_object();
  w.key("scope");
  w.begin_object();
  w.key("name");
  w.string(request.scope_name);
  if (!request.scope_version.empty()) {
    w.key("version");
    w.string(request.scope_version);
  }
  w.end_object();
  w.key("metrics");
  w.begin_array();
  for (const auto& m : request.metrics) metric(w, m);
  w.end_array();
  w.end_object();
  w.end_array();
  w.end_object();
  w.end_array();
  w.end_object();
  return w.take();
}

std::string encode_otlp_json(const std::vector<prometheus::MetricFamily>& families,
                             const OtlpEncodeContext& context) {
  return encode_otlp_json(otlp_request(families, context));
}

}  // namespace rdma_exporter
