// The `--once --format json` document, byte for byte (schema in
// docs/configuration.md).

#include "exporter/formats/json.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "common/metric_sink.hpp"
#include "exporter/snapshot.hpp"

namespace rdma_exporter {
namespace {

TEST(JsonDocument, OutcomesAndSamples) {
  MetricSink sink;
  sink.counter("rdma_port_hw_rcvd_pkts_total", "Received \"packets\".",
               {{"device", "mlx5_0"}, {"port", "1"}}, 1e14);
  sink.gauge("rdma_exporter_collector_duration_seconds", "", {{"collector", "sysfs"}}, 0.25);
  prometheus::MetricFamily h{"rdma_x_seconds", "H.", prometheus::MetricType::Histogram, {}};
  prometheus::ClientMetric m;
  m.histogram.sample_count = 3;
  m.histogram.sample_sum = 1.5;
  m.histogram.bucket = {{1, 0.5}, {3, INFINITY}};
  h.metric.push_back(m);
  sink.family(h);
  sink.family({"rdma_y_total", "", prometheus::MetricType::Counter, {}});
  const std::vector<CollectorOutcome> outcomes{{"sysfs", {}, 0.5},
                                               {"netlink", {"no \"rdma\"\n", "again"}, 2}};

  EXPECT_EQ(render_json(sink.take(), outcomes, 1700000000.5),
            R"({"schema":"rdma_exporter/v1","timestamp_seconds":1700000000.5,)"
            R"("collectors":[{"name":"sysfs","success":true,"duration_seconds":0.5,"errors":[]},)"
            R"({"name":"netlink","success":false,"duration_seconds":2,)"
            R"("errors":["no \"rdma\"\n","again"]}],)"
            R"("metrics":[{"name":"rdma_port_hw_rcvd_pkts_total","type":"counter",)"
            R"("help":"Received \"packets\".","samples":[{"labels":{"device":"mlx5_0","port":"1"},)"
            R"("value":100000000000000}]},)"
            R"({"name":"rdma_exporter_collector_duration_seconds","type":"gauge","help":"",)"
            R"("samples":[{"labels":{"collector":"sysfs"},"value":0.25}]},)"
            R"({"name":"rdma_x_seconds","type":"histogram","help":"H.",)"
            R"("samples":[{"labels":{},"count":3,"sum":1.5,)"
            R"("buckets":[{"le":0.5,"count":1},{"le":"+Inf","count":3}]}]},)"
            R"({"name":"rdma_y_total","type":"counter","help":"","samples":[]}]})"
            "\n");
}

TEST(JsonDocument, ValuesThatAreNotFiniteAreStrings) {
  MetricSink sink;
  sink.gauge("a", "", {}, NAN);
  sink.gauge("b", "", {}, INFINITY);
  sink.gauge("c", "", {}, -INFINITY);
  prometheus::MetricFamily h{"h", "", prometheus::MetricType::Histogram, {}};
  prometheus::ClientMetric m;
  m.histogram.sample_count = 1;
  m.histogram.sample_sum = NAN;
  m.histogram.bucket = {{0, -INFINITY}, {1, INFINITY}};
  h.metric.push_back(m);
  sink.family(h);
  EXPECT_EQ(render_json(sink.take(), {}, 0),
            R"({"schema":"rdma_exporter/v1","timestamp_seconds":0,"collectors":[],"metrics":[)"
            R"({"name":"a","type":"gauge","help":"","samples":[{"labels":{},"value":"NaN"}]},)"
            R"({"name":"b","type":"gauge","help":"","samples":[{"labels":{},"value":"+Inf"}]},)"
            R"({"name":"c","type":"gauge","help":"","samples":[{"labels":{},"value":"-Inf"}]},)"
            R"({"name":"h","type":"histogram","help":"","samples":[{"labels":{},"count":1,)"
            R"("sum":"NaN","buckets":[{"le":"-Inf","count":0},{"le":"+Inf","count":1}]}]}]})"
            "\n");
}

}  // namespace
}  // namespace rdma_exporter
