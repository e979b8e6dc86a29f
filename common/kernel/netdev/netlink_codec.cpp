#include "common/kernel/netdev/netlink_codec.hpp"

#include <libmnl/libmnl.h>
#include <linux/ethtool.h>
#include <linux/ethtool_netlink.h>
#include <linux/genetlink.h>

#include <array>
#include <cstring>
#include <span>

#include "common/kernel/netlink/attributes.hpp"
#include "common/kernel/netlink/messages.hpp"

namespace rdma_exporter::ethnl {
using namespace netlink;  // NOLINT(google-build-using-namespace)

namespace {

constexpr uint16_t kLinkStateMax = kLinkStateExtDownCount;

// A generic netlink request: nlmsghdr, genlmsghdr, then what `fill` puts.
template <typename Fill>
Bytes build(uint16_t type, uint8_t cmd, uint8_t version, Fill&& fill) {
  Bytes buf(512);
  nlmsghdr* n = mnl_nlmsg_put_header(buf.data());
  n->nlmsg_type = type;
  n->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  auto* g = static_cast<genlmsghdr*>(mnl_nlmsg_put_extra_header(n, sizeof(genlmsghdr)));
  g->cmd = cmd;
  g->version = version;
  fill(n);
  buf.resize(n->nlmsg_len);
  return buf;
}

// The request header nest of an ethtool message: the netdev by name, and
// flags.
void put_header(nlmsghdr* n, uint16_t nest_type, const std::string& ifname, uint32_t flags) {
  nlattr* nest = mnl_attr_nest_start(n, nest_type);
  mnl_attr_put_strz(n, ETHTOOL_A_HEADER_DEV_NAME, ifname.c_str());
  if (flags != 0) mnl_attr_put_u32(n, ETHTOOL_A_HEADER_FLAGS, flags);
  mnl_attr_nest_end(n, nest);
}

// Walks the one answer of type `family` and command `cmd` to a request, and
// indexes its attributes.
template <std::size_t N>
Result<AttrTable<N>> one_answer(const Reply& reply, uint16_t family, uint8_t cmd,
                                const char* what) {
  std::optional<AttrTable<N>> table;
  Status s = walk_messages(reply, family, what, [&](const nlmsghdr& m) -> Status {
    if (table) return malformed(std::string("more than one answer to ") + what);
    const std::size_t len = mnl_nlmsg_get_payload_len(&m);
    if (len < sizeof(genlmsghdr)) return malformed(std::string(what) + " without its genlmsghdr");
    genlmsghdr g{};
    std::memcpy(&g, mnl_nlmsg_get_payload(&m), sizeof g);
    if (g.cmd != cmd) {
      return malformed(std::string(what) + " answered with command " + std::to_string(g.cmd));
    }
    const std::size_t offset = GENL_HDRLEN;
    auto t = table_of<N>(static_cast<const uint8_t*>(mnl_nlmsg_get_payload(&m)) + offset,
                         len - offset, what);
    if (!t) return t.error();
    table = *t;
    return ok_status();
  });
  if (!s) return s.error();
  if (!table) return malformed(std::string("no answer to ") + what);
  return *table;
}

// A FEC statistic: an array of u64, the total first, then one per lane;
// empty when the driver does not count it.
Result<std::optional<FecCounter>> fec_counter(const nlattr* a, const char* name) {
  if (a == nullptr) return std::optional<FecCounter>();
  const std::size_t len = mnl_attr_get_payload_len(a);
  if (len % sizeof(uint64_t) != 0 || len > sizeof(uint64_t) * 9) {
    return malformed(std::string("attribute ") + name + " has " + std::to_string(len) +
                     " bytes, not 8 for the total and 8 per lane");
  }
  if (len == 0) return std::optional<FecCounter>();
  std::array<uint64_t, 9> values{};
  std::memcpy(values.data(), mnl_attr_get_payload(a), len);
  FecCounter c;
  c.total = values[0];
  c.lanes.assign(values.begin() + 1, values.begin() + static_cast<long>(len / sizeof(uint64_t)));
  return std::optional<FecCounter>(std::move(c));
}

}  // namespace

Bytes build_get_family() {
  return build(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1,
               [](nlmsghdr* n) { mnl_attr_put_strz(n, CTRL_ATTR_FAMILY_NAME, ETHTOOL_GENL_NAME); });
}

Result<uint16_t> decode_family(const Reply& reply) {
  auto t = one_answer<CTRL_ATTR_MAX + 1>(reply, GENL_ID_CTRL, CTRL_CMD_NEWFAMILY,
                                         "CTRL_CMD_GETFAMILY ethtool");
  if (!t) return t.error();
  const nlattr* id = (*t)[CTRL_ATTR_FAMILY_ID];
  if (id == nullptr) return malformed("missing attribute CTRL_ATTR_FAMILY_ID");
  if (Status s = check_type(id, MNL_TYPE_U16, "CTRL_ATTR_FAMILY_ID"); !s) return s.error();
  return mnl_attr_get_u16(id);
}

Bytes build_linkstate_get(uint16_t family, const std::string& ifname) {
  return build(family, ETHTOOL_MSG_LINKSTATE_GET, ETHTOOL_GENL_VERSION,
               [&](nlmsghdr* n) { put_header(n, ETHTOOL_A_LINKSTATE_HEADER, ifname, 0); });
}

Result<LinkState> decode_linkstate(const Reply& reply, uint16_t family) {
  auto t = one_answer<kLinkStateMax + 1>(reply, family, ETHTOOL_MSG_LINKSTATE_GET_REPLY,
                                         "ETHTOOL_MSG_LINKSTATE_GET");
  if (!t) return t.error();
  LinkState out;
  std::optional<uint8_t> link;
  Status s = all(optional(*t, ETHTOOL_A_LINKSTATE_LINK, "ETHTOOL_A_LINKSTATE_LINK", get_u8, link),
                 optional(*t, ETHTOOL_A_LINKSTATE_EXT_STATE, "ETHTOOL_A_LINKSTATE_EXT_STATE",
                          get_u8, out.ext_state),
                 optional(*t, ETHTOOL_A_LINKSTATE_EXT_SUBSTATE, "ETHTOOL_A_LINKSTATE_EXT_SUBSTATE",
                          get_u8, out.ext_substate),
                 optional(*t, kLinkStateExtDownCount, "ETHTOOL_A_LINKSTATE_EXT_DOWN_CNT", get_u32,
                          out.down_events));
  if (!s) return s.error();
  if (link) out.link = *link != 0;
  return out;
}

Bytes build_fec_get(uint16_t family, const std::string& ifname) {
  return build(family, ETHTOOL_MSG_FEC_GET, ETHTOOL_GENL_VERSION, [&](nlmsghdr* n) {
    put_header(n, ETHTOOL_A_FEC_HEADER, ifname, ETHTOOL_FLAG_STATS);
  });
}

Result<Fec> decode_fec(const Reply& reply, uint16_t family) {
  auto t = one_answer<ETHTOOL_A_FEC_MAX + 1>(reply, family, ETHTOOL_MSG_FEC_GET_REPLY,
                                             "ETHTOOL_MSG_FEC_GET");
  if (!t) return t.error();
  Fec out;
  if (Status s = optional(*t, ETHTOOL_A_FEC_ACTIVE, "ETHTOOL_A_FEC_ACTIVE", get_u32, out.active);
      !s) {
    return s.error();
  }
  if (const nlattr* stats = (*t)[ETHTOOL_A_FEC_STATS]) {
    auto st = table_of_nest<ETHTOOL_A_FEC_STAT_MAX + 1>(stats, "ETHTOOL_A_FEC_STATS");
    if (!st) return st.error();
    auto corrected =
        fec_counter((*st)[ETHTOOL_A_FEC_STAT_CORRECTED], "ETHTOOL_A_FEC_STAT_CORRECTED");
    auto uncorr = fec_counter((*st)[ETHTOOL_A_FEC_STAT_UNCORR], "ETHTOOL_A_FEC_STAT_UNCORR");
    auto bits = fec_counter((*st)[ETHTOOL_A_FEC_STAT_CORR_BITS], "ETHTOOL_A_FEC_STAT_CORR_BITS");
    for (const auto* r : {&corrected, &uncorr, &bits}) {
      if (!*r) return r->error();
    }
    out.corrected_blocks = std::move(corrected).value();
    out.uncorrectable_blocks = std::move(uncorr).value();
    out.corrected_bits = std::move(bits).value();
  }
  return out;
}

Bytes build_module_eeprom_get(uint16_t family, const std::string& ifname, const EepromRead& read) {
  return build(family, ETHTOOL_MSG_MODULE_EEPROM_GET, ETHTOOL_GENL_VERSION, [&](nlmsghdr* n) {
    put_header(n, ETHTOOL_A_MODULE_EEPROM_HEADER, ifname, 0);
    mnl_attr_put_u32(n, ETHTOOL_A_MODULE_EEPROM_OFFSET, read.offset);
    mnl_attr_put_u32(n, ETHTOOL_A_MODULE_EEPROM_LENGTH, read.length);
    mnl_attr_put_u8(n, ETHTOOL_A_MODULE_EEPROM_PAGE, read.page);
    mnl_attr_put_u8(n, ETHTOOL_A_MODULE_EEPROM_BANK, read.bank);
    mnl_attr_put_u8(n, ETHTOOL_A_MODULE_EEPROM_I2C_ADDRESS, read.address);
  });
}

Result<Bytes> decode_module_eeprom(const Reply& reply, uint16_t family, const EepromRead& read) {
  auto t = one_answer<ETHTOOL_A_MODULE_EEPROM_MAX + 1>(
      reply, family, ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY, "ETHTOOL_MSG_MODULE_EEPROM_GET");
  if (!t) return t.error();
  const nlattr* data = (*t)[ETHTOOL_A_MODULE_EEPROM_DATA];
  if (data == nullptr) return malformed("missing attribute ETHTOOL_A_MODULE_EEPROM_DATA");
  const std::size_t len = mnl_attr_get_payload_len(data);
  if (len != read.length) {
    return malformed("ETHTOOL_A_MODULE_EEPROM_DATA has " + std::to_string(len) +
                     " bytes, not the " + std::to_string(read.length) + " asked for");
  }
  const auto* bytes = static_cast<const uint8_t*>(mnl_attr_get_payload(data));
  return Bytes(bytes, bytes + len);
}

std::string ext_state_name(uint8_t state) {
  static constexpr std::array<const char*, 11> kNames = {"autoneg",
                                                         "link_training_failure",
                                                         "link_logical_mismatch",
                                                         "bad_signal_integrity",
                                                         "no_cable",
                                                         "cable_issue",
                                                         "eeprom_issue",
                                                         "calibration_failure",
                                                         "power_budget_exceeded",
                                                         "overheat",
                                                         "module"};
  return state < kNames.size() ? kNames[state] : "state" + std::to_string(state);
}

std::string ext_substate_name(uint8_t state, uint8_t substate) {
  // Each state's substates, numbered from 1 (<linux/ethtool.h>).
  static constexpr std::array<const char*, 6> kAutoneg = {
      "no_partner_detected",          "ack_not_received",
      "next_page_exchange_failed",    "no_partner_detected_force_mode",
      "fec_mismatch_during_override", "no_hcd"};
  static constexpr std::array<const char*, 4> kTraining = {
      "kr_frame_lock_not_acquired", "kr_link_inhibit_timeout",
      "kr_link_partner_did_not_set_receiver_ready", "remote_fault"};
  static constexpr std::array<const char*, 5> kLogical = {
      "pcs_did_not_acquire_block_lock", "pcs_did_not_acquire_am_lock",
      "pcs_did_not_get_align_status", "fc_fec_is_not_locked", "rs_fec_is_not_locked"};
  static constexpr std::array<const char*, 4> kSignal = {
      "large_number_of_physical_errors", "unsupported_rate", "serdes_reference_clock_lost",
      "serdes_alos"};
  static constexpr std::array<const char*, 2> kCable = {"unsupported_cable", "cable_test_failure"};
  static constexpr std::array<const char*, 1> kModule = {"cmis_not_ready"};
  std::span<const char* const> names;
  switch (state) {
    case ETHTOOL_LINK_EXT_STATE_AUTONEG:
      names = kAutoneg;
      break;
    case ETHTOOL_LINK_EXT_STATE_LINK_TRAINING_FAILURE:
      names = kTraining;
      break;
    case ETHTOOL_LINK_EXT_STATE_LINK_LOGICAL_MISMATCH:
      names = kLogical;
      break;
    case ETHTOOL_LINK_EXT_STATE_BAD_SIGNAL_INTEGRITY:
      names = kSignal;
      break;
    case ETHTOOL_LINK_EXT_STATE_CABLE_ISSUE:
      names = kCable;
      break;
    case ETHTOOL_LINK_EXT_STATE_MODULE:
      names = kModule;
      break;
    default:
      break;
  }
  if (substate >= 1 && substate <= names.size()) return names[substate - 1];
  return "substate" + std::to_string(substate);
}

std::string fec_mode_name(uint32_t link_mode_bit) {
  switch (link_mode_bit) {
    case ETHTOOL_LINK_MODE_FEC_NONE_BIT:
      return "off";
    case ETHTOOL_LINK_MODE_FEC_RS_BIT:
      return "rs";
    case ETHTOOL_LINK_MODE_FEC_BASER_BIT:
      return "baser";
    case ETHTOOL_LINK_MODE_FEC_LLRS_BIT:
      return "llrs";
    default:
      return "bit" + std::to_string(link_mode_bit);
  }
}

}  // namespace rdma_exporter::ethnl
