#include "exporter/formats/otlp_model.hpp"

#include <algorithm>
#include <cmath>

#include "exporter/formats/otlp_naming.hpp"
#include "exporter/formats/prometheus_values.hpp"

namespace rdma_exporter {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

OtlpNumber number(double v, bool allow_int) {
  // 2^63 is exact as a double; every integral double below it fits in int64.
  constexpr double kTwo63 = 9223372036854775808.0;
  if (allow_int && std::isfinite(v) && v == std::trunc(v) && v >= -kTwo63 && v < kTwo63) {
    return static_cast<int64_t>(v);
  }
  return v;
}

// The attributes and times of the point of `m`.
template <typename Point>
Point point(const ClientMetric& m, const OtlpEncodeContext& context, bool cumulative) {
  Point p;
  p.attributes = m.label;
  if (cumulative) p.start_time_unix_nano = context.start_time_unix_nano;
  p.time_unix_nano = context.time_unix_nano;
  return p;
}

// OTLP buckets from Prometheus' cumulative ones: finite bounds, strictly
// increasing, and one count per bucket plus the one above the last bound.
void set_buckets(OtlpHistogramPoint& p, const ClientMetric::Histogram& h) {
  uint64_t below = 0;
  for (const auto& b : h.bucket) {
    if (!std::isfinite(b.upper_bound)) continue;  // +Inf is implied; NaN is meaningless
    if (!p.explicit_bounds.empty() && !(b.upper_bound > p.explicit_bounds.back())) continue;
    p.explicit_bounds.push_back(b.upper_bound);
    p.bucket_counts.push_back(b.cumulative_count > below ? b.cumulative_count - below : 0);
    below = std::max(below, b.cumulative_count);
  }
  p.bucket_counts.push_back(h.sample_count > below ? h.sample_count - below : 0);
}

template <typename Numbers>
Numbers numbers(const MetricFamily& f, const OtlpEncodeContext& context, bool cumulative,
                bool allow_int) {
  Numbers out;
  for (const auto& m : f.metric) {
    auto p = point<OtlpNumberPoint>(m, context, cumulative);
    p.value = number(sample_value(f, m), allow_int);
    out.points.push_back(p);
  }
  return out;
}

OtlpHistogram histogram(const MetricFamily& f, const OtlpEncodeContext& context) {
  OtlpHistogram out;
  for (const auto& m : f.metric) {
    auto p = point<OtlpHistogramPoint>(m, context, true);
    p.count = m.histogram.sample_count;
    p.sum = m.histogram.sample_sum;
    set_buckets(p, m.histogram);
    out.points.push_back(std::move(p));
  }
  return out;
}

OtlpSummary summary(const MetricFamily& f, const OtlpEncodeContext& context) {
  OtlpSummary out;
  for (const auto& m : f.metric) {
    auto p = point<OtlpSummaryPoint>(m, context, true);
    p.count = m.summary.sample_count;
    p.sum = m.summary.sample_sum;
    p.quantiles = m.summary.quantile;
    out.points.push_back(p);
  }
  return out;
}

OtlpMetric metric(const MetricFamily& f, const OtlpEncodeContext& context) {
  OtlpMetricName mapped = otlp_metric_name(f.name, f.type);
  OtlpMetric out{std::move(mapped.name), f.help, std::move(mapped.unit), {}};
  switch (f.type) {
    case MetricType::Counter:
      out.data = numbers<OtlpSum>(f, context, true, true);
      break;
    case MetricType::Histogram:
      out.data = histogram(f, context);
      break;
    case MetricType::Summary:
      out.data = summary(f, context);
      break;
    case MetricType::Gauge:
    case MetricType::Untyped:
      // Durations and timestamps stay doubles even when they are whole.
      out.data = numbers<OtlpGauge>(f, context, false, out.unit != "s");
      break;
  }
  return out;
}

}  // namespace

OtlpRequest otlp_request(const std::vector<prometheus::MetricFamily>& families,
                         const OtlpEncodeContext& context) {
  OtlpRequest request{context.resource_attributes, context.scope_name, context.scope_version, {}};
  for (const auto& f : families) {
    if (!f.metric.empty()) request.metrics.push_back(metric(f, context));
  }
  return request;
}

}  // namespace rdma_exporter
