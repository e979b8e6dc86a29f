#include "exporter/probe/local_ports/ports.hpp"

namespace rdma_exporter::probe {

bool port_selected(const PortFilter& filter, uint8_t port, bool ethernet) {
  return (!filter.port || *filter.port == port) &&
         (filter.link_layer.empty() || (filter.link_layer == "ethernet") == ethernet);
}

PortSelection select_ports(std::vector<DeviceView>& devices, const PortFilter& filter,
                           const std::vector<InterfaceAddress>& addresses,
                           const std::vector<ChosenPort>& previous) {
  PortSelection out;
  for (DeviceView& d : devices) {
    for (const PortView& v : d.ports) {
      PortReport report{d.name, v.port, port_state::excluded, ""};
      if (!port_selected(filter, v.port, v.ethernet)) {
        d.used->erase(v.port);
        out.reports.push_back(report);
        continue;
      }
      if (!d.used->contains(v.port)) {
        if (!v.active || !v.info) {
          report.state = v.active ? port_state::no_gid : port_state::inactive;
          out.reports.push_back(report);
          continue;
        }
        d.used->insert(v.port);
      }
      std::optional<ChosenPort> chosen;
      if (v.info) {
        const std::string subnet = gid_subnet(v.info->gid, v.info->ethernet, addresses);
        chosen = ChosenPort{d.name, *v.info, rail_of(d.name, v.port, subnet, filter.rails)};
      } else {
        // Its GID went: it keeps probing with the one it had.
        for (const auto& old : previous) {
          if (old.device == d.name && old.info.port == v.port) chosen = old;
        }
        if (!chosen) {
          report.state = port_state::no_gid;
          out.reports.push_back(report);
          continue;
        }
      }
      report.state = !v.active ? port_state::down
                     : v.info  ? port_state::probing
                               : port_state::no_gid;
      report.rail = chosen->rail;
      out.reports.push_back(report);
      out.ports.push_back(std::move(*chosen));
    }
  }
  return out;
}

}  // namespace rdma_exporter::probe
