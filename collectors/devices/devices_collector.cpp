#include "collectors/devices/devices_collector.hpp"

#include <array>

#include "collectors/registry.hpp"

namespace rdma_exporter {

std::string node_type_name(uint8_t type) {
  static constexpr std::array<const char*, 8> kNames = {
      "unknown", "ca", "switch", "router", "rnic", "usnic", "usnic_udp", "unspecified"};
  return type < kNames.size() ? kNames[type] : "unknown";
}

std::string port_state_name(uint8_t state) {
  static constexpr std::array<const char*, 6> kNames = {"NOP",   "DOWN",   "INIT",
                                                        "ARMED", "ACTIVE", "ACTIVE_DEFER"};
  return state < kNames.size() ? kNames[state] : "UNKNOWN";
}

std::string port_phys_state_name(uint8_t state) {
  static constexpr std::array<const char*, 8> kNames = {"NOP",
                                                        "SLEEP",
                                                        "POLLING",
                                                        "DISABLED",
                                                        "PORT_CONFIGURATION_TRAINING",
                                                        "LINK_UP",
                                                        "LINK_ERROR_RECOVERY",
                                                        "PHY_TEST"};
  return state < kNames.size() ? kNames[state] : "UNKNOWN";
}

std::vector<std::string> DevicesCollector::collect(Scrape& scrape, MetricSink& sink) {
  std::vector<std::string> errors;
  const Topology* topology = scrape.topology_for(errors);
  if (topology == nullptr) return errors;
  for (const auto& entry : topology->devices) {
    const auto& d = entry.device;
    sink.info("rdma_device_info", "RDMA device identity from rdma netlink; the value is always 1.",
              {{"device", d.name},
               {"fw_version", d.fw_version.value_or("")},
               {"node_guid", d.node_guid ? nldev::format_guid(*d.node_guid) : ""},
               {"sys_image_guid", d.sys_image_guid ? nldev::format_guid(*d.sys_image_guid) : ""},
               {"node_type", d.node_type ? node_type_name(*d.node_type) : ""},
               {"protocol", d.protocol.value_or("")}});
    sink.gauge("rdma_device_ports", "Number of ports of the RDMA device.", {{"device", d.name}},
               d.port_count);

    if (!entry.ports) {
      errors.push_back("list ports of " + d.name + ": " + entry.ports.error().message);
      continue;
    }
    for (const auto& p : *entry.ports) {
      Labels base{{"device", d.name}, {"port", std::to_string(p.index)}};
      if (p.state) {
        sink.gauge("rdma_port_state",
                   "Logical port state: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.", base,
                   *p.state);
      }
      if (p.phys_state) {
        sink.gauge(
            "rdma_port_phys_state",
            "Physical port state: 2 POLLING, 3 DISABLED, 5 LINK_UP, 6 LINK_ERROR_RECOVERY, ...",
            base, *p.phys_state);
      }
      Labels info = base;
      info.emplace_back("state", p.state ? port_state_name(*p.state) : "");
      info.emplace_back("phys_state", p.phys_state ? port_phys_state_name(*p.phys_state) : "");
      info.emplace_back("netdev", p.netdev_name.value_or(""));
      sink.info("rdma_port_info",
                "Port state names and the network device behind the port; the value is always 1.",
                std::move(info));
      if (p.lid)
        sink.gauge("rdma_port_lid", "InfiniBand local identifier of the port.", base, *p.lid);
      if (p.sm_lid) {
        sink.gauge("rdma_port_sm_lid", "LID of the subnet manager the port reports to.", base,
                   *p.sm_lid);
      }
      if (p.lmc) sink.gauge("rdma_port_lmc", "LID mask control of the port.", base, *p.lmc);
    }
  }
  return errors;
}

CollectorEntry devices_entry() {
  CollectorEntry e;
  e.name = "devices";
  e.help = "Device identity and port state, from rdma netlink.";
  e.make = [](const CollectorContext&) { return std::make_unique<DevicesCollector>(); };
  return e;
}

}  // namespace rdma_exporter
