#pragma once

// What the formats that walk the families themselves (OpenMetrics, the JSON
// document, OTLP) read from a Prometheus family: its type's name and a
// sample's value, and numbers written the way Prometheus writes them.

#include <prometheus/metric_family.h>

#include <string>

namespace rdma_exporter {

// "counter", "gauge", "histogram", "summary"; untyped is "unknown".
const char* metric_type_name(prometheus::MetricType type);

// The value of a counter, gauge or untyped sample; NaN for histograms and
// summaries, which have no single value.
double sample_value(const prometheus::MetricFamily& family, const prometheus::ClientMetric& m);

// The shortest decimal that reads back as the same double; integral values
// below 1e15 as plain digits; "NaN", "+Inf", "-Inf".
std::string format_number(double v);

}  // namespace rdma_exporter
