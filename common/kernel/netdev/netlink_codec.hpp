#pragma once

// Pure codecs for ethtool netlink (generic netlink family "ethtool", Linux
// 5.6 and later): resolving the family's id, and ETHTOOL_MSG_LINKSTATE_GET
// and ETHTOOL_MSG_FEC_GET (with statistics) for one netdev. Plain structs,
// no I/O; the requests go through any Transport on a NETLINK_GENERIC socket.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/kernel/netlink/transport.hpp"
#include "common/result.hpp"

namespace rdma_exporter::ethnl {

using netlink::Bytes;
using netlink::Reply;

// ETHTOOL_A_LINKSTATE_EXT_DOWN_CNT (Linux 6.4), after EXT_SUBSTATE; not in
// older uapi headers.
inline constexpr uint16_t kLinkStateExtDownCount = 7;

// CTRL_CMD_GETFAMILY for "ethtool", with an ACK.
Bytes build_get_family();
// The family's id. A kernel without ethtool netlink answers ENOENT.
Result<uint16_t> decode_family(const Reply& reply);

// ETHTOOL_MSG_LINKSTATE_GET_REPLY.
struct LinkState {
  std::optional<bool> link;
  // Why the link is down, when the driver says (ETHTOOL_LINK_EXT_STATE_*,
  // and a substate that refines it).
  std::optional<uint8_t> ext_state;
  std::optional<uint8_t> ext_substate;
  // Times the link went down since the driver started counting (Linux 6.4
  // and drivers that count).
  std::optional<uint32_t> down_events;
};

Bytes build_linkstate_get(uint16_t family, const std::string& ifname);
// Errors carry the kernel's code: ENODEV for an unknown netdev.
Result<LinkState> decode_linkstate(const Reply& reply, uint16_t family);

// One FEC counter: its total and, where the driver counts per lane, each
// lane's share.
struct FecCounter {
  uint64_t total = 0;
  std::vector<uint64_t> lanes;
};

// ETHTOOL_MSG_FEC_GET_REPLY with statistics.
struct Fec {
  // The FEC mode in use, as an ETHTOOL_LINK_MODE_FEC_*_BIT; unset when the
  // driver names none.
  std::optional<uint32_t> active;
  std::optional<FecCounter> corrected_blocks, uncorrectable_blocks, corrected_bits;
};

Bytes build_fec_get(uint16_t family, const std::string& ifname);
// A driver without FEC makes the kernel answer EOPNOTSUPP.
Result<Fec> decode_fec(const Reply& reply, uint16_t family);

// ETHTOOL_MSG_MODULE_EEPROM_GET (Linux 5.13): `length` bytes at `offset` of
// page `page` in bank `bank` at two-wire address `address`. The kernel reads
// within one half of the 256-byte window (offset and length both below 128,
// or both from 128 on).
struct EepromRead {
  uint8_t address = 0x50;
  uint8_t bank = 0;
  uint8_t page = 0;
  uint32_t offset = 0;
  uint32_t length = 128;
};
Bytes build_module_eeprom_get(uint16_t family, const std::string& ifname, const EepromRead& read);
// The bytes read; fewer or more than asked for is malformed. EOPNOTSUPP when
// the driver reads no module (or the kernel predates the message), EIO or
// ENODEV from a driver whose module does not answer or is not plugged.
Result<Bytes> decode_module_eeprom(const Reply& reply, uint16_t family, const EepromRead& read);

// "autoneg", "link_training_failure", ..., "module"; "state<N>" for a state
// this build does not know.
std::string ext_state_name(uint8_t state);
// The substate of `state` as the kernel's uapi names it, lower case
// ("no_partner_detected", "kr_frame_lock_not_acquired", "rs_fec_is_not_locked",
// "serdes_alos", ...); "substate<N>" for one this build does not know.
std::string ext_substate_name(uint8_t state, uint8_t substate);
// "off", "rs", "baser", "llrs"; "bit<N>" for another link mode bit.
std::string fec_mode_name(uint32_t link_mode_bit);

}  // namespace rdma_exporter::ethnl
