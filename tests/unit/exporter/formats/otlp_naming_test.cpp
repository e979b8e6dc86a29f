// The OTLP names and units of the Prometheus metrics (docs/metrics.md,
// "OTLP push").

#include "exporter/formats/otlp_naming.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace rdma_exporter {
namespace {

using prometheus::MetricType;

TEST(OtlpNaming, RuleExamples) {
  struct Case {
    const char* prometheus;
    MetricType type;
    const char* name;
    const char* unit;
  } cases[] = {
      {"rdma_port_hw_rcvd_pkts_total", MetricType::Counter, "rdma.port.hw.rcvd_pkts", "1"},
      {"rdma_port_pma_port_xmit_data_bytes_total", MetricType::Counter,
       "rdma.port.pma.port_xmit_data", "By"},
      {"rdma_port_pma_VL15_dropped_total", MetricType::Counter, "rdma.port.pma.VL15_dropped", "1"},
      {"rdma_port_rate_bytes_per_second", MetricType::Gauge, "rdma.port.rate", "By/s"},
      {"rdma_port_state", MetricType::Gauge, "rdma.port.state", "1"},
      {"rdma_port_link_layer_info", MetricType::Gauge, "rdma.port.link_layer_info", "1"},
      {"rdma_device_info", MetricType::Gauge, "rdma.device.info", "1"},
      {"rdma_device_hw_submitted_cmds_total", MetricType::Counter, "rdma.device.hw.submitted_cmds",
       "1"},
      {"rdma_qp_stat_rx_write_requests_total", MetricType::Counter,
       "rdma.qp.stat.rx_write_requests", "1"},
      {"rdma_qps", MetricType::Gauge, "rdma.qps", "1"},
      {"rdma_exporter_collector_duration_seconds", MetricType::Gauge,
       "rdma.exporter.collector.duration", "s"},
      {"rdma_exporter_collections_total", MetricType::Counter, "rdma.exporter.collections", "1"},
      {"rdma_exporter_http_requests_total", MetricType::Counter, "rdma.exporter.http.requests",
       "1"},
      {"rdma_exporter_otlp_last_success_timestamp_seconds", MetricType::Gauge,
       "rdma.exporter.otlp.last_success_timestamp", "s"},
      {"rdma_exporter_build_info", MetricType::Gauge, "rdma.exporter.build_info", "1"},
      {"rdma_transceiver_temperature_celsius", MetricType::Gauge, "rdma.transceiver.temperature",
       "Cel"},
      {"rdma_transceiver_supply_voltage_volts", MetricType::Gauge,
       "rdma.transceiver.supply_voltage", "V"},
      {"rdma_transceiver_rx_power_watts", MetricType::Gauge, "rdma.transceiver.rx_power", "W"},
      {"rdma_transceiver_tx_bias_amperes", MetricType::Gauge, "rdma.transceiver.tx_bias", "A"},
      {"rdma_exporter_probe_latency_seconds", MetricType::Histogram, "rdma.exporter.probe_latency",
       "s"},
      // _total only leaves counters; a suffix is kept when nothing else is left.
      {"rdma_port_errors_total", MetricType::Gauge, "rdma.port.errors_total", "1"},
      {"rdma_port_total", MetricType::Counter, "rdma.port.total", "1"},
      {"rdma_port_bytes", MetricType::Gauge, "rdma.port.bytes", "1"},
      {"rdma_port_", MetricType::Gauge, "rdma.port_", "1"},
      // Outside the known prefixes: only suffixes change.
      {"node_network_receive_bytes_total", MetricType::Counter, "node_network_receive", "By"},
  };
  for (const auto& c : cases) {
    const OtlpMetricName got = otlp_metric_name(c.prometheus, c.type);
    EXPECT_EQ(got.name, c.name) << c.prometheus;
    EXPECT_EQ(got.unit, c.unit) << c.prometheus;
  }
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

MetricType type_by_name(const std::string& name) {
  return name.ends_with("_total") ? MetricType::Counter : MetricType::Gauge;
}

// Every metric the reference names maps to a distinct OTLP name.
TEST(OtlpNaming, DocumentedMetricsMapToDistinctNames) {
  const std::string doc = read_text(RDMA_EXPORTER_SOURCE_DIR "/docs/metrics.md");
  std::set<std::string> prometheus;
  const std::regex name(R"(`(rdma_[A-Za-z0-9_]+)`)");
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), name); it != std::sregex_iterator();
       ++it) {
    prometheus.insert((*it)[1]);
  }
  ASSERT_GT(prometheus.size(), 30u);
  std::map<std::string, std::string> seen;
  for (const auto& p : prometheus) {
    const std::string otlp = otlp_metric_name(p, type_by_name(p)).name;
    auto [it, inserted] = seen.emplace(otlp, p);
    EXPECT_TRUE(inserted) << p << " and " << it->second << " both map to " << otlp;
  }
}

// The table in docs/metrics.md says what the function does.
TEST(OtlpNaming, DocumentedTableMatchesTheFunction) {
  const std::string doc = read_text(RDMA_EXPORTER_SOURCE_DIR "/docs/metrics.md");
  const std::regex row(
      R"(\| `(rdma_[A-Za-z0-9_]+)` \| (\w+) \| `([A-Za-z0-9_.]+)` \| `([^`]+)` \|)");
  int rows = 0;
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator();
       ++it) {
    const std::string kind = (*it)[2];
    const MetricType type = kind == "counter"     ? MetricType::Counter
                            : kind == "histogram" ? MetricType::Histogram
                                                  : MetricType::Gauge;
    const OtlpMetricName got = otlp_metric_name((*it)[1].str(), type);
    EXPECT_EQ(got.name, (*it)[3]) << (*it)[1];
    EXPECT_EQ(got.unit, (*it)[4]) << (*it)[1];
    ++rows;
  }
  EXPECT_GE(rows, 10);
}

}  // namespace
}  // namespace rdma_exporter
