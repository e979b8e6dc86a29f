#pragma once

// A fake rdma netlink kernel behind the Transport interface. It decodes the
// requests the exporter sends and answers in the kernel's wire format, from
// a model of devices and ports that tests change between collections.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/kernel/netlink/transport.hpp"
#include "tests/fake_kernel/nl_message.hpp"

namespace rdma_exporter::testing {

// An optional (dynamic) hw counter of a port, as mlx5 offers them.
struct FakeOptionalCounter {
  std::string name;
  bool enabled = false;
  uint64_t value = 0;
};

// mlx5's optional counters, in the driver's order.
std::vector<FakeOptionalCounter> mlx5_optional_counters();

struct FakePort {
  uint32_t index = 1;
  uint8_t state = 4;       // ACTIVE
  uint8_t phys_state = 5;  // LINK_UP
  std::string netdev;
  uint32_t netdev_index = 0;
  std::optional<uint32_t> lid;  // InfiniBand ports only
  std::optional<uint32_t> sm_lid;
  std::optional<uint8_t> lmc;
  std::vector<std::pair<std::string, uint64_t>> counters;
  int stat_error = 0;  // errno STAT_GET answers with, if not 0
  // Per-QP counter mode: RDMA_COUNTER_MODE_NONE/AUTO/MANUAL and the auto mask.
  uint32_t counter_mode = 0;
  uint32_t auto_mask = 0;
  // Optional counters follow `counters` in the driver's table: the index of
  // optional_counters[i] is counters.size() + i. Enabled ones are listed by
  // STAT_GET with their values, after the others. A port without any (rxe)
  // lists its counters in STAT_GET_STATUS without the enabled flag.
  std::vector<FakeOptionalCounter> optional_counters;
  int status_error = 0;  // errno STAT_GET_STATUS answers with (kernels before 5.16: EINVAL)
};

// A QP in the device's resource tracker.
struct FakeQp {
  uint32_t lqpn = 0;
  uint32_t port = 1;
  uint8_t type = 2;             // IB_QPT_RC
  uint8_t state = 3;            // IB_QPS_RTS
  std::optional<uint32_t> pid;  // user QP; kernel QPs have kern_name instead
  std::string kern_name;
  std::optional<uint32_t> counter_id;  // the counter set it is bound to
};

// A per-QP counter set ("counter") as mlx5 keeps it.
struct FakeCounterSet {
  uint32_t id = 0;
  uint32_t port = 1;
  uint32_t mode = 0;               // mode it was bound in (AUTO or MANUAL)
  std::optional<uint8_t> qp_type;  // auto by type
  std::optional<uint32_t> pid;     // auto by pid
  std::vector<std::pair<std::string, uint64_t>> counters;
};

struct FakeDevice {
  uint32_t index = 0;
  std::string name;
  std::string fw_version;
  uint64_t node_guid = 0;
  uint64_t sys_image_guid = 0;
  uint8_t node_type = 1;  // RDMA_NODE_IB_CA
  std::string protocol = "roce";
  std::vector<FakePort> ports;
  int port_list_error = 0;  // errno the PORT_GET dump answers with, if not 0
  std::vector<std::pair<std::string, uint64_t>> resources;

  // Per-QP counters. mlx5-like by default; false models rxe: auto mode is
  // accepted but binds nothing, and manual binds fail with ENOMEM.
  bool qp_counters_supported = true;
  bool counter_values_32bit = false;  // per-QP counter values wrap at 2^32
  std::vector<std::string> qp_counter_names = {"rx_write_requests", "rx_read_requests",
                                               "out_of_sequence", "packet_seq_err",
                                               "local_ack_timeout_err"};
  std::vector<FakeQp> qps;
  std::vector<FakeCounterSet> counter_sets;
  uint32_t next_lqpn = 100;
  uint32_t next_counter_id = 1;
};

struct SeenRequest {
  uint16_t cmd = 0;
  uint16_t flags = 0;
  std::optional<uint32_t> dev_index;
  std::optional<uint32_t> port;
};

class FakeNldev final : public netlink::Transport {
 public:
  std::vector<FakeDevice> devices;

  // Fault injection.
  bool absent = false;           // socket() says EPROTONOSUPPORT
  int interrupt_next_dumps = 0;  // mark this many dumps NLM_F_DUMP_INTR
  std::size_t messages_per_datagram = 2;
  std::function<void(netlink::Reply&)> tamper;  // edits a reply before it is returned
  // QP numbers the QP dump leaves out, as when a QP is destroyed between the
  // QP dump and the counter-set dump that still lists it.
  std::vector<uint32_t> qps_missing_from_dump;

  bool privileged = true;            // false: writes (STAT_SET, STAT_DEL) answer EPERM
  int stat_set_error = 0;            // errno every STAT_SET/STAT_DEL answers with, if not 0
  std::size_t sets_per_message = 4;  // counter sets per dump message (multi-part dumps)

  std::vector<SeenRequest> requests;

  // --- simulation of what applications do -----------------------------------
  // Creates a QP (user QP when pid is set, kernel QP otherwise) and returns its
  // number. On a port in auto mode a user QP is bound like the kernel does at
  // RST->INIT: to the set matching its type and/or pid, or to a new set.
  uint32_t create_qp(uint32_t dev_index, uint32_t port, uint8_t type, std::optional<uint32_t> pid,
                     const std::string& kern_name = "");
  // Destroys a QP; a counter set left without QPs is freed, its values kept
  // in the port's totals (as the kernel keeps freed counters' history).
  void destroy_qp(uint32_t dev_index, uint32_t lqpn);
  // Destroys every QP of a process on every device.
  void exit_process(uint32_t pid);
  // Traffic on a QP: adds to the counter of its set (wrapping at 2^32 when
  // counter_values_32bit) and to the port total of the same name.
  void traffic(uint32_t dev_index, uint32_t lqpn, const std::string& counter, uint64_t delta);

  FakeDevice* device(uint32_t dev_index);

  Result<netlink::Reply> exchange(std::span<const uint8_t> request) override;

  // Requests that read this device (by index).
  std::size_t requests_for(uint32_t dev_index) const;

 private:
  const FakeDevice* find(std::optional<uint32_t> index) const;
  netlink::Reply dump(uint16_t cmd, std::vector<Bytes> messages);

  // Per-QP counter commands; each takes the request as sent.
  netlink::Reply counter_mode_get(const Bytes& request);
  netlink::Reply counter_sets_dump(const Bytes& request);
  netlink::Reply qp_dump(const Bytes& request);
  netlink::Reply stat_set(const Bytes& request);
  netlink::Reply stat_del(const Bytes& request);
  netlink::Reply counter_status_get(const Bytes& request);
  netlink::Reply set_optional_counters(FakeDevice& dev, FakePort& port, const Bytes& request);
};

}  // namespace rdma_exporter::testing
