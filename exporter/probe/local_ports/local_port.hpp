#pragma once

#include <memory>
#include <string>

#include "exporter/probe/verbs/device.hpp"
#include "exporter/probe/wire/protocol.hpp"

namespace rdma_exporter::probe {

class UdPort;  // ud_port.hpp

// A port of this host the probe uses: it probes from it and answers on it.
struct LocalPort {
  std::shared_ptr<Device> device;
  PortInfo info;  // with the port's default GID
  std::string rail;
  // Its UD queue pair, which answers UD probes (none until it could be made).
  std::shared_ptr<UdPort> ud;

  // "mlx5_0/1"
  std::string name() const { return device->name() + "/" + std::to_string(info.port); }
  // How a hello lists it.
  wire::PortAd ad() const { return {device->name(), info.port, info.ethernet, info.gid, rail}; }
};

}  // namespace rdma_exporter::probe
