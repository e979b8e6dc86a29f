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

// One hw counter of a port as RDMA_NLDEV_CMD_STAT_GET_STATUS lists it: its
// index in the driver's table and, for optional counters only, whether it is
// enabled (RDMA_NLDEV_ATTR_STAT_HWCOUNTER_DYNAMIC). Optional counters that are
// enabled also appear with their values in the port's STAT_GET answer.
struct HwCounterStatus {
  std::string name;
  uint32_t index = 0;
  std::optional<bool> enabled;  // set for optional counters only
};

struct PortCounterStatus {
  uint32_t dev_index = 0;
  uint32_t port = 0;
  std::vector<HwCounterStatus> counters;
};

struct ResourceSummary {
  uint32_t dev_index = 0;
  std::string dev_name;
  std::vector<std::pair<std::string, uint64_t>> entries;  // "qp" -> current count
};

// How a port groups QPs into counter sets (RDMA_NLDEV_CMD_STAT_GET with
// STAT_RES = RES_QP and STAT_MODE): RDMA_COUNTER_MODE_NONE/AUTO/MANUAL, and
// in auto mode the criteria mask (RDMA_COUNTER_MASK_QP_TYPE | _PID).
struct CounterMode {
  uint32_t mode = 0;
  uint32_t auto_mask = 0;
};

// One per-QP counter set ("counter") bound on a port.
struct CounterSet {
  uint32_t dev_index = 0;
  std::string dev_name;
  uint32_t port = 0;
  uint32_t id = 0;
  uint32_t mode = 0;                     // the mode it was bound in
  std::optional<uint8_t> qp_type;        // auto mode by QP type
  std::optional<uint32_t> pid;           // auto mode by pid, user QPs
  std::optional<std::string> kern_name;  // auto mode by pid, kernel QPs
  std::vector<uint32_t> lqpns;
  std::vector<HwCounter> counters;
};

// One QP from the resource tracker (RDMA_NLDEV_CMD_RES_QP_GET).
struct Qp {
  uint32_t dev_index = 0;
  std::string dev_name;
  std::optional<uint32_t> port;  // unset until the QP is bound to a port
  uint32_t lqpn = 0;
  uint8_t type = 0;   // IB_QPT_*
  uint8_t state = 0;  // IB_QPS_*
  std::optional<uint32_t> pid;
  std::optional<std::string> kern_name;
};

// What a manual bind answered: the counter set the QP went to.
struct BindResult {
  uint32_t counter_id = 0;
  uint32_t lqpn = 0;
};

// Formats a GUID the way the kernel's sysfs and iproute2 do: "0002:c903:00a1:b2c3".
std::string format_guid(uint64_t guid);

}  // namespace rdma_exporter::nldev
