#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "exporter/probe/plan/rails.hpp"
#include "exporter/probe/stats/stats.hpp"
#include "exporter/probe/verbs/device.hpp"

namespace rdma_exporter::probe {

// One port of an open device as a scan reads it.
struct PortView {
  uint8_t port = 1;
  bool ethernet = true;
  bool active = false;
  std::optional<PortInfo> info;  // with the GID to use; none: it has none now
};

// An open device's ports, and which of them are in use (seen active with a
// GID once: probing from them from then on). select_ports() updates `used`.
struct DeviceView {
  std::string name;
  std::vector<PortView> ports;
  std::set<uint8_t>* used = nullptr;
};

// Which ports the probe may use (probe.port, probe.link_layer, probe.rails).
struct PortFilter {
  std::optional<uint8_t> port;
  std::string link_layer;  // "ethernet", "infiniband", or "" for both
  std::map<std::string, std::string> rails;
};

// Whether the filter lets a port through (its number and link layer).
bool port_selected(const PortFilter& filter, uint8_t port, bool ethernet);

struct ChosenPort {
  std::string device;
  PortInfo info;
  std::string rail;
};

struct PortSelection {
  std::vector<ChosenPort> ports;    // to probe from and answer on
  std::vector<PortReport> reports;  // every port, with its state
};

// The ports to use: every port of the devices that passes the filter and was
// once seen active with a GID. A port in use whose GID went (an address
// removed) keeps the one it had in `previous` and shows as no_gid. Pure: the
// devices are read by the caller.
PortSelection select_ports(std::vector<DeviceView>& devices, const PortFilter& filter,
                           const std::vector<InterfaceAddress>& addresses,
                           const std::vector<ChosenPort>& previous);

}  // namespace rdma_exporter::probe
