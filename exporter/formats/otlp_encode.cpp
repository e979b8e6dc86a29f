#include "exporter/formats/otlp_encode.hpp"

#include <bit>
#include <cmath>

#include "common/json_writer.hpp"
#include "common/text.hpp"
#include "exporter/formats/otlp_naming.hpp"

namespace rdma_exporter {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

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
constexpr uint64_t kCumulative = 2;  // AGGREGATION_TEMPORALITY_CUMULATIVE
}  // namespace pb

enum class Kind { gauge, sum, histogram, summary };

Kind kind_of(MetricType type) {
  switch (type) {
    case MetricType::Counter:
      return Kind::sum;
    case MetricType::Histogram:
      return Kind::histogram;
    case MetricType::Summary:
      return Kind::summary;
    case MetricType::Gauge:
    case MetricType::Untyped:
      break;
  }
  return Kind::gauge;
}

double number_of(const ClientMetric& m, MetricType type) {
  switch (type) {
    case MetricType::Counter:
      return m.counter.value;
    case MetricType::Untyped:
      return m.untyped.value;
    default:
      return m.gauge.value;
  }
}

struct Number {
  bool is_int = false;
  int64_t i = 0;
  double d = 0;
};

Number number(double v, bool allow_int) {
  // 2^63 is exact as a double; every integral double below it fits in int64.
  constexpr double kTwo63 = 9223372036854775808.0;
  if (allow_int && std::isfinite(v) && v == std::trunc(v) && v >= -kTwo63 && v < kTwo63) {
    return {true, static_cast<int64_t>(v), 0};
  }
  return {false, 0, v};
}

// OTLP buckets from Prometheus' cumulative ones: finite bounds, strictly
// increasing, and one count per bucket plus the +Inf bucket.
struct Buckets {
  std::vector<double> bounds;
  std::vector<uint64_t> counts;
};

Buckets buckets_of(const ClientMetric::Histogram& h) {
  Buckets out;
  uint64_t below = 0;
  for (const auto& b : h.bucket) {
    if (!std::isfinite(b.upper_bound)) continue;  // +Inf is implied; NaN is meaningless
    if (!out.bounds.empty() && !(b.upper_bound > out.bounds.back())) continue;
    out.bounds.push_back(b.upper_bound);
    out.counts.push_back(b.cumulative_count > below ? b.cumulative_count - below : 0);
    below = std::max(below, b.cumulative_count);
  }
  out.counts.push_back(h.sample_count > below ? h.sample_count - below : 0);
  return out;
}

// ---------------------------------------------------------------- protobuf

class ProtoWriter {
 public:
  void varint_field(uint32_t field, uint64_t v) {
    tag(field, 0);
    varint(v);
  }
  void fixed64_field(uint32_t field, uint64_t v) {
    tag(field, 1);
    fixed64(v);
  }
  void double_field(uint32_t field, double v) { fixed64_field(field, std::bit_cast<uint64_t>(v)); }
  void sfixed64_field(uint32_t field, int64_t v) { fixed64_field(field, static_cast<uint64_t>(v)); }
  void string_field(uint32_t field, std::string_view s) {
    if (!is_valid_utf8(s)) return string_field(field, valid_utf8(s));
    tag(field, 2);
    varint(s.size());
    out_.append(s);
  }
  void packed_fixed64(uint32_t field, const std::vector<uint64_t>& values) {
    tag(field, 2);
    varint(values.size() * 8);
    for (uint64_t v : values) fixed64(v);
  }
  void packed_double(uint32_t field, const std::vector<double>& values) {
    tag(field, 2);
    varint(values.size() * 8);
    for (double v : values) fixed64(std::bit_cast<uint64_t>(v));
  }

  // A length-delimited submessage: its length is inserted in front of it
  // once it is complete.
  void begin(uint32_t field) {
    tag(field, 2);
    open_.push_back(out_.size());
  }
  void end() {
    const std::size_t start = open_.back();
    open_.pop_back();
    char buf[10];
    const std::size_t n = encode_varint(out_.size() - start, buf);
    out_.insert(start, buf, n);
  }

  std::string take() { return std::move(out_); }

 private:
  static std::size_t encode_varint(uint64_t v, char* buf) {
    std::size_t n = 0;
    while (v >= 0x80) {
      buf[n++] = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    buf[n++] = static_cast<char>(v);
    return n;
  }
  void varint(uint64_t v) {
    char buf[10];
    out_.append(buf, encode_varint(v, buf));
  }
  void fixed64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void tag(uint32_t field, uint32_t wire_type) { varint((uint64_t{field} << 3) | wire_type); }

  std::string out_;
  std::vector<std::size_t> open_;
};

void proto_attribute(ProtoWriter& w, uint32_t field, std::string_view key, std::string_view value) {
  w.begin(field);
  w.string_field(pb::kKeyValueKey, key);
  w.begin(pb::kKeyValueValue);
  w.string_field(pb::kAnyValueString, value);
  w.end();
  w.end();
}

void proto_labels(ProtoWriter& w, uint32_t field, const ClientMetric& m) {
  for (const auto& l : m.label) proto_attribute(w, field, l.name, l.value);
}

void proto_metric(ProtoWriter& w, const MetricFamily& f, const OtlpEncodeContext& ctx) {
  const OtlpMetricName mapped = otlp_metric_name(f.name, f.type);
  const Kind kind = kind_of(f.type);
  w.begin(pb::kScopeMetricsMetrics);
  w.string_field(pb::kMetricName, mapped.name);
  if (!f.help.empty()) w.string_field(pb::kMetricDescription, f.help);
  w.string_field(pb::kMetricUnit, mapped.unit);
  switch (kind) {
    case Kind::gauge:
    case Kind::sum: {
      const bool allow_int = kind == Kind::sum || mapped.unit != "s";
      w.begin(kind == Kind::sum ? pb::kMetricSum : pb::kMetricGauge);
      for (const auto& m : f.metric) {
        w.begin(pb::kDataPoints);
        if (kind == Kind::sum) w.fixed64_field(pb::kPointStartTime, ctx.start_time_unix_nano);
        w.fixed64_field(pb::kPointTime, ctx.time_unix_nano);
        const Number n = number(number_of(m, f.type), allow_int);
        if (n.is_int) {
          w.sfixed64_field(pb::kNumberAsInt, n.i);
        } else {
          w.double_field(pb::kNumberAsDouble, n.d);
        }
        proto_labels(w, pb::kNumberAttributes, m);
        w.end();
      }
      if (kind == Kind::sum) {
        w.varint_field(pb::kAggregationTemporality, pb::kCumulative);
        w.varint_field(pb::kSumIsMonotonic, 1);
      }
      w.end();
      break;
    }
    case Kind::histogram: {
      w.begin(pb::kMetricHistogram);
      for (const auto& m : f.metric) {
        const Buckets b = buckets_of(m.histogram);
        w.begin(pb::kDataPoints);
        w.fixed64_field(pb::kPointStartTime, ctx.start_time_unix_nano);
        w.fixed64_field(pb::kPointTime, ctx.time_unix_nano);
        w.fixed64_field(pb::kHistogramCount, m.histogram.sample_count);
        w.double_field(pb::kHistogramSum, m.histogram.sample_sum);
        w.packed_fixed64(pb::kHistogramBucketCounts, b.counts);
        if (!b.bounds.empty()) w.packed_double(pb::kHistogramExplicitBounds, b.bounds);
        proto_labels(w, pb::kHistogramAttributes, m);
        w.end();
      }
      w.varint_field(pb::kAggregationTemporality, pb::kCumulative);
      w.end();
      break;
    }
    case Kind::summary: {
      w.begin(pb::kMetricSummary);
      for (const auto& m : f.metric) {
        w.begin(pb::kDataPoints);
        w.fixed64_field(pb::kPointStartTime, ctx.start_time_unix_nano);
        w.fixed64_field(pb::kPointTime, ctx.time_unix_nano);
        w.fixed64_field(pb::kSummaryCount, m.summary.sample_count);
        w.double_field(pb::kSummarySum, m.summary.sample_sum);
        for (const auto& q : m.summary.quantile) {
          w.begin(pb::kSummaryQuantileValues);
          w.double_field(pb::kQuantileQuantile, q.quantile);
          w.double_field(pb::kQuantileValue, q.value);
          w.end();
        }
        proto_labels(w, pb::kSummaryAttributes, m);
        w.end();
      }
      w.end();
      break;
    }
  }
  w.end();
}

// -------------------------------------------------------------------- JSON

// 64-bit integers are strings in OTLP/JSON.
void json_uint64(JsonWriter& w, uint64_t v) {
  w.string(std::to_string(v));
}

void json_attribute(JsonWriter& w, std::string_view key, std::string_view value) {
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

void json_labels(JsonWriter& w, const ClientMetric& m) {
  w.key("attributes");
  w.begin_array();
  for (const auto& l : m.label) json_attribute(w, l.name, l.value);
  w.end_array();
}

void json_times(JsonWriter& w, const OtlpEncodeContext& ctx, bool with_start) {
  if (with_start) {
    w.key("startTimeUnixNano");
    json_uint64(w, ctx.start_time_unix_nano);
  }
  w.key("timeUnixNano");
  json_uint64(w, ctx.time_unix_nano);
}

void json_metric(JsonWriter& w, const MetricFamily& f, const OtlpEncodeContext& ctx) {
  const OtlpMetricName mapped = otlp_metric_name(f.name, f.type);
  const Kind kind = kind_of(f.type);
  w.begin_object();
  w.key("name");
  w.string(mapped.name);
  if (!f.help.empty()) {
    w.key("description");
    w.string(f.help);
  }
  w.key("unit");
  w.string(mapped.unit);
  switch (kind) {
    case Kind::gauge:
    case Kind::sum: {
      const bool allow_int = kind == Kind::sum || mapped.unit != "s";
      w.key(kind == Kind::sum ? "sum" : "gauge");
      w.begin_object();
      w.key("dataPoints");
      w.begin_array();
      for (const auto& m : f.metric) {
        w.begin_object();
        json_labels(w, m);
        json_times(w, ctx, kind == Kind::sum);
        const Number n = number(number_of(m, f.type), allow_int);
        if (n.is_int) {
          w.key("asInt");
          w.string(std::to_string(n.i));
        } else {
          w.key("asDouble");
          w.number(n.d);
        }
        w.end_object();
      }
      w.end_array();
      if (kind == Kind::sum) {
        w.key("aggregationTemporality");
        w.integer(pb::kCumulative);
        w.key("isMonotonic");
        w.boolean(true);
      }
      w.end_object();
      break;
    }
    case Kind::histogram: {
      w.key("histogram");
      w.begin_object();
      w.key("dataPoints");
      w.begin_array();
      for (const auto& m : f.metric) {
        const Buckets b = buckets_of(m.histogram);
        w.begin_object();
        json_labels(w, m);
        json_times(w, ctx, true);
        w.key("count");
        json_uint64(w, m.histogram.sample_count);
        w.key("sum");
        w.number(m.histogram.sample_sum);
        w.key("bucketCounts");
        w.begin_array();
        for (uint64_t c : b.counts) json_uint64(w, c);
        w.end_array();
        w.key("explicitBounds");
        w.begin_array();
        for (double bound : b.bounds) w.number(bound);
        w.end_array();
        w.end_object();
      }
      w.end_array();
      w.key("aggregationTemporality");
      w.integer(pb::kCumulative);
      w.end_object();
      break;
    }
    case Kind::summary: {
      w.key("summary");
      w.begin_object();
      w.key("dataPoints");
      w.begin_array();
      for (const auto& m : f.metric) {
        w.begin_object();
        json_labels(w, m);
        json_times(w, ctx, true);
        w.key("count");
        json_uint64(w, m.summary.sample_count);
        w.key("sum");
        w.number(m.summary.sample_sum);
        w.key("quantileValues");
        w.begin_array();
        for (const auto& q : m.summary.quantile) {
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
      w.end_array();
      w.end_object();
      break;
    }
  }
  w.end_object();
}

}  // namespace

std::string encode_otlp_protobuf(const std::vector<prometheus::MetricFamily>& families,
                                 const OtlpEncodeContext& context) {
  ProtoWriter w;
  w.begin(pb::kRequestResourceMetrics);
  w.begin(pb::kResourceMetricsResource);
  for (const auto& [key, value] : context.resource_attributes) {
    proto_attribute(w, pb::kResourceAttributes, key, value);
  }
  w.end();
  w.begin(pb::kResourceMetricsScopeMetrics);
  w.begin(pb::kScopeMetricsScope);
  w.string_field(pb::kScopeName, context.scope_name);
  if (!context.scope_version.empty()) w.string_field(pb::kScopeVersion, context.scope_version);
  w.end();
  for (const auto& f : families) {
    if (!f.metric.empty()) proto_metric(w, f, context);
  }
  w.end();
  w.end();
  return w.take();
}

std::string encode_otlp_json(const std::vector<prometheus::MetricFamily>& families,
                             const OtlpEncodeContext& context) {
  JsonWriter w;
  w.begin_object();
  w.key("resourceMetrics");
  w.begin_array();
  w.begin_object();
  w.key("resource");
  w.begin_object();
  w.key("attributes");
  w.begin_array();
  for (const auto& [key, value] : context.resource_attributes) json_attribute(w, key, value);
  w.end_array();
  w.end_object();
  w.key("scopeMetrics");
  w.begin_array();
  w.begin_object();
  w.key("scope");
  w.begin_object();
  w.key("name");
  w.string(context.scope_name);
  if (!context.scope_version.empty()) {
    w.key("version");
    w.string(context.scope_version);
  }
  w.end_object();
  w.key("metrics");
  w.begin_array();
  for (const auto& f : families) {
    if (!f.metric.empty()) json_metric(w, f, context);
  }
  w.end_array();
  w.end_object();
  w.end_array();
  w.end_object();
  w.end_array();
  w.end_object();
  return w.take();
}

}  // namespace rdma_exporter
