#pragma once

// A fake rtnetlink DCB interface behind the Transport interface: RTM_GETDCB
// with DCB_CMD_IEEE_GET answered as net/dcb/dcbnl.c does, in the real wire
// format, from a model of netdevs.

#include <linux/dcbnl.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/kernel/netlink/transport.hpp"
#include "tests/fake_kernel/nl_message.hpp"

namespace rdma_exporter::testing {

struct FakeDcbNetdev {
  bool dcb = true;  // false: no dcbnl_ops (veth), the kernel answers EOPNOTSUPP
  std::optional<ieee_ets> ets;
  std::optional<ieee_pfc> pfc;
  std::vector<dcb_app> apps;
  std::optional<uint8_t> dcbx;
};

// The RTM_GETDCB answer dcbnl_ieee_fill() builds, with the request's flags.
Bytes dcb_ieee_message(const std::string& ifname, const FakeDcbNetdev& n, uint16_t flags = 0);

// An mlx5-like configuration: RoCE on priority 3 with PFC, ETS 50:50
// between traffic classes 0 and 3, priority 6 strict for CNPs, DSCP trust
// (the driver's default DSCP map: priority = dscp / 8).
FakeDcbNetdev mlx5_dcb();

class FakeDcb final : public netlink::Transport {
 public:
  std::map<std::string, FakeDcbNetdev> netdevs;
  std::vector<std::string> asked;  // names in the requests, in order

  Result<netlink::Reply> exchange(std::span<const uint8_t> request) override;
};

}  // namespace rdma_exporter::testing
