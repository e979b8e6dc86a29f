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

#include "collectors/netlink/transport.hpp"
#include "tests/fake_kernel/nl_message.hpp"

namespace rdma_exporter::testing {

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
  std::vector<std::pair<std::string, uint64_t>> resources;
};

struct SeenRequest {
  uint16_t cmd = 0;
  uint16_t flags = 0;
  std::optional<uint32_t> dev_index;
  std::optional<uint32_t> port;
};

class FakeNldev final : public nldev::Transport {
 public:
  std::vector<FakeDevice> devices;

  // Fault injection.
  bool absent = false;           // socket() says EPROTONOSUPPORT
  int interrupt_next_dumps = 0;  // mark this many dumps NLM_F_DUMP_INTR
  std::size_t messages_per_datagram = 2;
  std::function<void(nldev::Reply&)> tamper;  // edits a reply before it is returned

  std::vector<SeenRequest> requests;

  Result<nldev::Reply> exchange(std::span<const uint8_t> request) override;

  // Requests that read this device (by index).
  std::size_t requests_for(uint32_t dev_index) const;

 private:
  const FakeDevice* find(std::optional<uint32_t> index) const;
  nldev::Reply dump(uint16_t cmd, std::vector<Bytes> messages);
};

}  // namespace rdma_exporter::testing
