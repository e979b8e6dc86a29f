#pragma once

// What the OTLP encoding tests encode: a context with literal times and one
// family of each kind the exporter makes.

#include <cmath>
#include <vector>

#include "common/metric_sink.hpp"
#include "exporter/formats/otlp_model.hpp"

namespace rdma_exporter::testing {

// The times every point carries, as the tests expect them written.
inline constexpr uint64_t kStartTimeUnixNano = 1'700'000'000'000'000'000ULL;
inline constexpr uint64_t kTimeUnixNano = 1'700'000'060'123'456'789ULL;

inline OtlpEncodeContext test_context() {
  OtlpEncodeContext c;
  c.resource_attributes = {{"service.name", "rdma_exporter"}, {"host.name", "node7"}};
  c.scope_version = "0.1.0";
  c.start_time_unix_nano = kStartTimeUnixNano;
  c.time_unix_nano = kTimeUnixNano;
  return c;
}

inline prometheus::MetricFamily histogram_family() {
  prometheus::MetricFamily f{"rdma_exporter_probe_latency_seconds",
                             "Probe latency.",
                             prometheus::MetricType::Histogram,
                             {}};
  prometheus::ClientMetric m;
  m.label = {{"device", "mlx5_0"}};
  m.histogram.sample_count = 10;
  m.histogram.sample_sum = 0.0375;
  m.histogram.bucket = {{2, 0.001}, {7, 0.005}, {9, 0.01}, {10, INFINITY}};
  f.metric.push_back(m);
  return f;
}

inline prometheus::MetricFamily summary_family() {
  prometheus::MetricFamily f{"rdma_x_seconds", "", prometheus::MetricType::Summary, {}};
  prometheus::ClientMetric m;
  m.label = {{"device", "rxe0"}};
  m.summary.sample_count = 4;
  m.summary.sample_sum = 2;
  m.summary.quantile = {{0.5, 0.25}, {0.99, 1.5}};
  f.metric.push_back(m);
  return f;
}

inline std::vector<prometheus::MetricFamily> test_families() {
  MetricSink sink;
  sink.counter("rdma_port_hw_rcvd_pkts_total", "Received packets.",
               {{"device", "rxe0"}, {"port", "1"}}, 123456789012.0);
  sink.gauge("rdma_exporter_collector_duration_seconds", "Duration.", {{"collector", "sysfs"}},
             0.5);
  sink.info("rdma_device_info", "Identity.", {{"device", "rxe0"}, {"fw_version", ""}});
  sink.family(histogram_family());
  sink.gauge("rdma_port_rate_bytes_per_second", "", {{"device", "rxe0"}, {"port", "1"}}, 12.5e9);
  return sink.take();
}

}  // namespace rdma_exporter::testing
