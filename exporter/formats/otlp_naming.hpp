#pragma once

#include <prometheus/metric_type.h>

#include <string>
#include <string_view>

namespace rdma_exporter {

struct OtlpMetricName {
  std::string name;  // dotted, without unit suffix or _total
  std::string unit;  // UCUM: "By", "s", "By/s" or "1"
};

// The OpenTelemetry name and unit of a Prometheus metric family. The rule
// (docs/metrics.md, "OTLP push", has the table):
//  1. counters lose their "_total" suffix;
//  2. a unit suffix moves into the unit: "_bytes_per_second" -> "By/s",
//     "_bytes" -> "By", "_seconds" -> "s"; everything else has unit "1"
//     ("_info" stays in the name);
//  3. the longest known family prefix becomes dotted segments
//     ("rdma_port_hw_" -> "rdma.port.hw."); the rest of the name, which holds
//     the driver's counter name, is kept as it is, underscores included.
// A suffix is only taken off when something is left of the name after the
// family prefix. Names outside every known prefix keep their underscores.
// Distinct Prometheus names map to distinct OTLP names unless they differ
// only by the suffixes of steps 1 and 2.
OtlpMetricName otlp_metric_name(std::string_view prometheus_name, prometheus::MetricType type);

}  // namespace rdma_exporter
