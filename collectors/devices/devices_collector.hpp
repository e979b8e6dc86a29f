#pragma once

#include "collectors/collector.hpp"

namespace rdma_exporter {

// Devices and ports from rdma netlink (RDMA_NLDEV_CMD_GET, RDMA_NLDEV_CMD_PORT_GET):
// rdma_device_info, rdma_device_ports, rdma_port_state, rdma_port_phys_state,
// rdma_port_info, rdma_port_lid, rdma_port_sm_lid, rdma_port_lmc.
class DevicesCollector final : public Collector {
 public:
  std::string_view name() const override { return "devices"; }
  std::vector<std::string> collect(Scrape& scrape, MetricSink& sink) override;
};

// Kernel enum values as iproute2 spells them.
std::string node_type_name(uint8_t type);
std::string port_state_name(uint8_t state);
std::string port_phys_state_name(uint8_t state);

}  // namespace rdma_exporter
