#pragma once

#include <optional>
#include <string>
#include <vector>

#include "collectors/device_filter.hpp"
#include "common/kernel/nldev/client.hpp"
#include "common/metric_sink.hpp"
#include "common/result.hpp"

namespace rdma_exporter {

namespace kubernetes {
class PodDirectory;
}

// A device as rdma netlink reports it, with its ports (or why they could
// not be read).
struct TopologyDevice {
  nldev::Device device;
  Result<std::vector<nldev::Port>> ports;
};

struct Topology {
  std::vector<TopologyDevice> devices;  // only the devices the filter allows
};

// A port as the collectors visit it: the labels every port metric starts
// with, how messages name it, and the netdev behind it.
struct PortRef {
  const nldev::Device& device;
  const nldev::Port& port;

  Labels labels() const { return {{"device", device.name}, {"port", std::to_string(port.index)}}; }
  // "mlx5_0 port 1"
  std::string name() const { return device.name + " port " + std::to_string(port.index); }
  // The netdev behind a RoCE or iWARP port; nullptr on InfiniBand.
  const std::string* netdev() const {
    return port.netdev_name && !port.netdev_name->empty() ? &*port.netdev_name : nullptr;
  }
};

// Calls fn(PortRef) for every port of every device whose ports could be
// listed (a device whose port list failed is reported by the devices
// collector).
template <typename Fn>
void for_each_port(const Topology& topology, Fn&& fn) {
  for (const auto& entry : topology.devices) {
    if (!entry.ports) continue;
    for (const auto& port : *entry.ports) fn(PortRef{entry.device, port});
  }
}

// What the collectors of one collection share: the device filter, the nldev
// client, and the device/port list, which is read from the kernel at most
// once per collection however many collectors ask for it.
class Scrape {
 public:
  Scrape(nldev::Client& netlink, const DeviceFilter& filter) : netlink_(netlink), filter_(filter) {}

  const DeviceFilter& filter() const { return filter_; }
  nldev::Client& netlink() { return netlink_; }

  // The filtered device and port list from rdma netlink.
  const Result<Topology>& topology();

  // The topology for a collector that needs it: nullptr when unavailable,
  // with the reason appended to `errors` unless the kernel simply has no
  // rdma netlink (nothing to read is not a failure).
  const Topology* topology_for(std::vector<std::string>& errors);

  // True when this kernel has no rdma netlink at all (no RDMA support loaded):
  // netlink collectors then have nothing to read, which is not a failure.
  bool netlink_absent();

  // The node's pods and containers (the `kubernetes` section); nullptr when
  // it is off.
  kubernetes::PodDirectory* pods() const { return pods_; }
  void set_pods(kubernetes::PodDirectory* pods) { pods_ = pods; }

 private:
  kubernetes::PodDirectory* pods_ = nullptr;
  nldev::Client& netlink_;
  const DeviceFilter& filter_;
  std::optional<Result<Topology>> topology_;
};

// True for the errors with which socket() says the protocol does not exist.
bool is_protocol_absent(const Error& e);

}  // namespace rdma_exporter
