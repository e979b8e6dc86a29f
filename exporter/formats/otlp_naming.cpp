#include "exporter/formats/otlp_naming.hpp"

#include <array>
#include <utility>

namespace rdma_exporter {
namespace {

// The first entry that matches wins, so more specific prefixes come first.
constexpr std::array<std::pair<std::string_view, std::string_view>, 14> kPrefixes{{
    {"rdma_exporter_collector_", "rdma.exporter.collector."},
    {"rdma_exporter_otlp_", "rdma.exporter.otlp."},
    {"rdma_exporter_http_", "rdma.exporter.http."},
    {"rdma_exporter_", "rdma.exporter."},
    {"rdma_device_hw_", "rdma.device.hw."},
    {"rdma_device_", "rdma.device."},
    {"rdma_port_pma_", "rdma.port.pma."},
    {"rdma_port_hw_", "rdma.port.hw."},
    {"rdma_port_", "rdma.port."},
    {"rdma_qp_stat_", "rdma.qp.stat."},
    {"rdma_netdev_", "rdma.netdev."},
    {"rdma_pcie_", "rdma.pcie."},
    {"rdma_transceiver_", "rdma.transceiver."},
    {"rdma_", "rdma."},
}};

constexpr std::array<std::pair<std::string_view, std::string_view>, 9> kUnits{{
    {"_bytes_per_second", "By/s"},
    {"_transfers_per_second", "{transfer}/s"},
    {"_lanes", "{lane}"},
    {"_bytes", "By"},
    {"_seconds", "s"},
    {"_celsius", "Cel"},
    {"_volts", "V"},
    {"_watts", "W"},
    {"_amperes", "A"},
}};

// Takes `suffix` off `rest` when something is left afterwards.
bool take_suffix(std::string_view& rest, std::string_view suffix) {
  if (rest.size() <= suffix.size() || !rest.ends_with(suffix)) return false;
  rest.remove_suffix(suffix.size());
  return true;
}

}  // namespace

OtlpMetricName otlp_metric_name(std::string_view prometheus_name, prometheus::MetricType type) {
  std::string_view prefix;
  std::string_view dotted;
  for (const auto& [from, to] : kPrefixes) {
    if (prometheus_name.size() > from.size() && prometheus_name.starts_with(from)) {
      prefix = from;
      dotted = to;
      break;
    }
  }
  std::string_view rest = prometheus_name.substr(prefix.size());
  if (type == prometheus::MetricType::Counter) take_suffix(rest, "_total");
  OtlpMetricName out{std::string(dotted), "1"};
  for (const auto& [suffix, unit] : kUnits) {
    if (take_suffix(rest, suffix)) {
      out.unit = std::string(unit);
      break;
    }
  }
  out.name.append(rest);
  return out;
}

}  // namespace rdma_exporter
