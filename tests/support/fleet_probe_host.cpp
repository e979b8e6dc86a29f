#include "tests/support/fleet_probe_host.hpp"

#include <string>

namespace rdma_exporter::testing {

using probe::DeviceReport;
using probe::PinglistReport;
using probe::PortReport;
using probe::SeriesShape;

namespace {

std::string numbered(std::size_t t, const std::string& prefix) {
  return prefix + std::to_string(t) + ".1:10911";
}

}  // namespace

void fill_fleet_probe_stats(probe::ProbeStats& stats, const std::vector<FleetProbePort>& ports,
                            std::size_t target_hosts, const FleetProbeIdentity& identity,
                            bool pair_counters) {
  std::vector<std::string> hosts = identity.target_hosts;
  if (hosts.empty()) {
    for (std::size_t t = 0; t < target_hosts; ++t) hosts.push_back(numbered(t, "10.1."));
  }
  for (const auto& host : hosts) stats.target({{"target", host}})->answered(ports.size());
  stats.set_targets({{"file_sd", static_cast<int>(hosts.size())}});
  std::vector<DeviceReport> devices;
  std::vector<PortReport> reports;
  for (std::size_t i = 0; i < ports.size(); ++i) {
    const std::string dev = "mlx5_" + std::to_string(i);
    const std::string rail = "rail" + std::to_string(i);
    devices.push_back({dev, probe::device_state::in_use, true, true});
    reports.push_back({dev, 1, probe::port_state::probing, rail});
    const Labels port = {{"device", dev}, {"port", "1"},   {"rail", rail},     {"op", "ud"},
                         {"size", "64"},  {"tclass", "0"}, {"clock", "device"}};
    std::vector<FleetProbeIdentity::Target> targets;
    if (i < identity.port_targets.size()) {
      targets = identity.port_targets[i];
    } else {
      for (std::size_t t = 0; t < ports[i].targets; ++t)
        targets.push_back({numbered(t, "10.0."), "r"});
    }
    for (const auto& target : targets) {
      Labels pair = {{"target", target.address},
                     {"device", dev},
                     {"port", "1"},
                     {"remote_device", dev},
                     {"remote_port", "1"},
                     {"rail", rail},
                     {"op", "ud"},
                     {"size", "64"},
                     {"tclass", "0"},
                     {"rack", target.group}};
      auto s = stats.series(pair, SeriesShape{false, false, pair_counters});
      s->sent();
      s->success(1e-5, 1.0);
    }
    for (const char* scope : {"group", "remote"}) {
      if ((scope[0] == 'g' && !ports[i].own_group) || (scope[0] == 'r' && !ports[i].remote)) {
        continue;
      }
      Labels l = port;
      l.emplace_back("scope", scope);
      stats.histogram("rdma_probe_group_latency_seconds", "", l)->observe(1e-5);
      Labels counted(port.begin(), port.end() - 1);  // without clock
      counted.emplace_back("scope", scope);
      stats.scope(counted)->invalid();
    }
    stats.histogram("rdma_probe_responder_delay_seconds", "", port)->observe(1e-6);
    stats.histogram("rdma_probe_prober_delay_seconds", "", port)->observe(1e-6);
    auto ud = stats.ud_port({{"device", dev}, {"port", "1"}});
    ud->answered();
  }
  stats.set_local(devices, reports, "host");
  stats.set_pinglist(PinglistReport{true, identity.group, identity.address, 1, 31, 4, 10000});
}

}  // namespace rdma_exporter::testing
