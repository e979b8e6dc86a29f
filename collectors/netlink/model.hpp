#pragma once

// Plain structs decoded from rdma netlink (nldev) replies. No Prometheus
// types and no I/O here.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rdma_exporter::nldev {

struct Device {
  uint32_t index = 0;
  std::string name;
  uint32_t port_count = 0;  // RDMA_NLDEV_CMD_GET reports the last port index
  std::optional<std::string> fw_version;
  std::optional<uint64_t> node_guid;
  std::optional<uint64_t> sys_image_guid;
  std::optional<uint8_t> node_type;     // RDMA_NODE_* from rdma_netlink.h
  std::optional<std::string> protocol;  // "roce", "ib", "iw", ...
};

struct Port {
  uint32_t dev_index = 0;
  std::string dev_name;
  uint32_t index = 0;
  std::optional<uint8_t> state;       // IB_PORT_* (1 DOWN .. 5 ACTIVE_DEFER)
  std::optional<uint8_t> phys_state;  // IB_PORT_PHYS_STATE_* (5 LinkUp, ...)
  std::optional<uint32_t> netdev_index;
  std::optional<std::string> netdev_name;
  std::optional<uint32_t> lid;     // InfiniBand only
  std::optional<uint32_t> sm_lid;  // InfiniBand only
  std::optional<uint8_t> lmc;      // InfiniBand only
};

struct HwCounter {
  std::string name;
  uint64_t value = 0;
};

struct PortCounters {
  uint32_t dev_index = 0;
  uint32_t port = 0;
  std::vector<HwCounter> counters;
};

struct ResourceSummary {
  uint32_t dev_index = 0;
  std::string dev_name;
  std::vector<std::pair<std::string, uint64_t>> entries;  // "qp" -> current count
};

// Formats a GUID the way the kernel's sysfs and iproute2 do: "0002:c903:00a1:b2c3".
std::string format_guid(uint64_t guid);

}  // namespace rdma_exporter::nldev
