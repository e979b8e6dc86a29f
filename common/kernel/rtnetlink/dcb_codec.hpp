#pragma once

// Pure codecs for a netdev's IEEE 802.1Qaz DCB configuration over rtnetlink
// (RTM_GETDCB with DCB_CMD_IEEE_GET): PFC, ETS and the APP table. Plain
// structs, no I/O; the request goes through any Transport on a NETLINK_ROUTE
// socket.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/kernel/netlink/transport.hpp"
#include "common/result.hpp"

namespace rdma_exporter::dcb {

using netlink::Bytes;
using netlink::Reply;

inline constexpr std::size_t kMaxTcs = 8;  // IEEE_8021QAZ_MAX_TCS

// struct ieee_ets: per traffic class bandwidth shares and selection
// algorithms, and the priority-to-traffic-class map.
struct Ets {
  uint8_t willing = 0;
  uint8_t ets_cap = 0;  // traffic classes the port supports
  uint8_t cbs = 0;
  std::array<uint8_t, kMaxTcs> tc_tx_bw{};  // percent, by traffic class
  std::array<uint8_t, kMaxTcs> tc_rx_bw{};
  std::array<uint8_t, kMaxTcs> tc_tsa{};   // IEEE_8021QAZ_TSA_*
  std::array<uint8_t, kMaxTcs> prio_tc{};  // traffic class, by priority
};

// struct ieee_pfc.
struct Pfc {
  uint8_t pfc_cap = 0;
  uint8_t pfc_en = 0;  // bit N: PFC on priority N
  uint8_t mbc = 0;
  uint16_t delay = 0;
  std::array<uint64_t, kMaxTcs> requests{};     // PFC frames sent
  std::array<uint64_t, kMaxTcs> indications{};  // PFC frames received
};

// struct dcb_app: an APP table entry. Selector IEEE_8021QAZ_APP_SEL_DSCP maps
// DSCP `protocol` to `priority`.
struct App {
  uint8_t selector = 0;
  uint8_t priority = 0;
  uint16_t protocol = 0;
};

struct IeeeConfig {
  std::string ifname;
  std::optional<Ets> ets;  // absent when the driver gives none
  std::optional<Pfc> pfc;
  std::vector<App> apps;
  std::optional<uint8_t> dcbx;  // DCB_CAP_DCBX_* flags
};

// RTM_GETDCB, DCB_CMD_IEEE_GET for `ifname`, with an ACK.
Bytes build_ieee_get(const std::string& ifname);

// The answer. A netdev without DCB makes the kernel answer EOPNOTSUPP (and
// ENODEV for an unknown name); those come back as errors with that code.
Result<IeeeConfig> decode_ieee(const Reply& reply);

}  // namespace rdma_exporter::dcb
