#include "tests/fake_kernel/fake_ethnl.hpp"

#include <linux/ethtool.h>
#include <linux/ethtool_netlink.h>
#include <linux/genetlink.h>

#include <cstring>

#include "common/kernel/netdev/netlink_codec.hpp"

namespace rdma_exporter::testing {
namespace {

netlink::Reply reply_of(std::vector<Bytes> messages) {
  netlink::Reply r;
  for (auto& m : messages) r.datagrams.push_back(std::move(m));
  return r;
}

NlMessage genl(uint16_t type, uint8_t cmd) {
  NlMessage m(type);
  genlmsghdr g{};
  g.cmd = cmd;
  g.version = ETHTOOL_GENL_VERSION;
  m.family_header(&g, sizeof g);
  return m;
}

// The request's device name, from its header nest (the request's first
// attribute, whatever the message).
std::optional<std::string> dev_name(const nlmsghdr* nlh) {
  const auto* a = static_cast<const nlattr*>(mnl_nlmsg_get_payload_offset(nlh, GENL_HDRLEN));
  int len = static_cast<int>(mnl_nlmsg_get_payload_len(nlh) - GENL_HDRLEN);
  while (mnl_attr_ok(a, len)) {
    if (mnl_attr_get_type(a) == 1) {  // ETHTOOL_A_*_HEADER
      const auto* inner = static_cast<const nlattr*>(mnl_attr_get_payload(a));
      int inner_len = static_cast<int>(mnl_attr_get_payload_len(a));
      while (mnl_attr_ok(inner, inner_len)) {
        if (mnl_attr_get_type(inner) == ETHTOOL_A_HEADER_DEV_NAME &&
            mnl_attr_validate(inner, MNL_TYPE_NUL_STRING) == 0) {
          return std::string(mnl_attr_get_str(inner));
        }
        inner_len -= static_cast<int>(MNL_ALIGN(inner->nla_len));
        inner = mnl_attr_next(inner);
      }
    }
    len -= static_cast<int>(MNL_ALIGN(a->nla_len));
    a = mnl_attr_next(a);
  }
  return std::nullopt;
}

void header_nest(NlMessage& m, uint16_t type, const std::string& ifname) {
  m.begin_nest(type)
      .u32(ETHTOOL_A_HEADER_DEV_INDEX, 7)
      .str(ETHTOOL_A_HEADER_DEV_NAME, ifname)
      .end_nest();
}

void stat(NlMessage& m, uint16_t type, const std::vector<uint64_t>& values) {
  // nla_put_64bit: a pad attribute first when the payload would not be
  // 8-byte aligned; the decoder must skip it.
  static constexpr uint64_t kNothing = 0;  // never a null source, even for no bytes
  m.raw(ETHTOOL_A_FEC_STAT_PAD, &kNothing, 0);
  m.raw(type, values.empty() ? &kNothing : values.data(), values.size() * sizeof(uint64_t));
}

}  // namespace

Result<netlink::Reply> FakeEthnl::exchange(std::span<const uint8_t> request) {
  const auto* nlh = reinterpret_cast<const nlmsghdr*>(request.data());
  if (request.size() < sizeof(nlmsghdr) + GENL_HDRLEN) return failure_reply(EINVAL, request);
  genlmsghdr g{};
  std::memcpy(&g, mnl_nlmsg_get_payload(nlh), sizeof g);
  if (nlh->nlmsg_type == GENL_ID_CTRL && g.cmd == CTRL_CMD_GETFAMILY) {
    asked.emplace_back("FAMILY");
    if (!family_present) return failure_reply(ENOENT, request);
    NlMessage m = genl(GENL_ID_CTRL, CTRL_CMD_NEWFAMILY);
    m.str(CTRL_ATTR_FAMILY_NAME, ETHTOOL_GENL_NAME);
    m.raw(CTRL_ATTR_FAMILY_ID, &kFamily, sizeof kFamily);
    m.u32(CTRL_ATTR_VERSION, 1);
    return reply_of({m.bytes(), ack_message()});
  }
  if (nlh->nlmsg_type != kFamily || !family_present) return failure_reply(EINVAL, request);
  auto ifname = dev_name(nlh);
  if (!ifname) return failure_reply(EINVAL, request);
  auto it = netdevs.find(*ifname);
  if (g.cmd == ETHTOOL_MSG_LINKSTATE_GET) {
    asked.push_back("LINKSTATE " + *ifname);
    if (it == netdevs.end()) return failure_reply(ENODEV, request);
    const FakeEthnlNetdev& n = it->second;
    NlMessage m = genl(kFamily, ETHTOOL_MSG_LINKSTATE_GET_REPLY);
    header_nest(m, ETHTOOL_A_LINKSTATE_HEADER, *ifname);
    if (n.link) m.u8(ETHTOOL_A_LINKSTATE_LINK, *n.link);
    if (n.ext_state) m.u8(ETHTOOL_A_LINKSTATE_EXT_STATE, *n.ext_state);
    if (n.ext_substate) m.u8(ETHTOOL_A_LINKSTATE_EXT_SUBSTATE, *n.ext_substate);
    if (n.down_events) m.u32(ethnl::kLinkStateExtDownCount, *n.down_events);
    return reply_of({m.bytes(), ack_message()});
  }
  if (g.cmd == ETHTOOL_MSG_FEC_GET) {
    asked.push_back("FEC " + *ifname);
    if (it == netdevs.end()) return failure_reply(ENODEV, request);
    const FakeEthnlNetdev& n = it->second;
    if (!n.fec) return failure_reply(EOPNOTSUPP, request);
    NlMessage m = genl(kFamily, ETHTOOL_MSG_FEC_GET_REPLY);
    header_nest(m, ETHTOOL_A_FEC_HEADER, *ifname);
    m.begin_nest(ETHTOOL_A_FEC_MODES).u32(ETHTOOL_A_BITSET_SIZE, 92).end_nest();
    m.u8(ETHTOOL_A_FEC_AUTO, 0);
    if (n.active) m.u32(ETHTOOL_A_FEC_ACTIVE, *n.active);
    if (n.fec_stats) {
      m.begin_nest(ETHTOOL_A_FEC_STATS);
      stat(m, ETHTOOL_A_FEC_STAT_CORRECTED, n.corrected);
      stat(m, ETHTOOL_A_FEC_STAT_UNCORR, n.uncorrectable);
      stat(m, ETHTOOL_A_FEC_STAT_CORR_BITS, n.corrected_bits);
      m.end_nest();
    }
    return reply_of({m.bytes(), ack_message()});
  }
  if (g.cmd == ETHTOOL_MSG_MODULE_EEPROM_GET) return module_eeprom(nlh, *ifname, request);
  return failure_reply(EOPNOTSUPP, request);
}

Result<netlink::Reply> FakeEthnl::module_eeprom(const nlmsghdr* nlh, const std::string& ifname,
                                                std::span<const uint8_t> request) {
  std::optional<uint32_t> offset, length;
  std::optional<uint8_t> page, bank, address;
  const auto* a = static_cast<const nlattr*>(mnl_nlmsg_get_payload_offset(nlh, GENL_HDRLEN));
  int len = static_cast<int>(mnl_nlmsg_get_payload_len(nlh) - GENL_HDRLEN);
  while (mnl_attr_ok(a, len)) {
    switch (mnl_attr_get_type(a)) {
      case ETHTOOL_A_MODULE_EEPROM_OFFSET:
        offset = mnl_attr_get_u32(a);
        break;
      case ETHTOOL_A_MODULE_EEPROM_LENGTH:
        length = mnl_attr_get_u32(a);
        break;
      case ETHTOOL_A_MODULE_EEPROM_PAGE:
        page = mnl_attr_get_u8(a);
        break;
      case ETHTOOL_A_MODULE_EEPROM_BANK:
        bank = mnl_attr_get_u8(a);
        break;
      case ETHTOOL_A_MODULE_EEPROM_I2C_ADDRESS:
        address = mnl_attr_get_u8(a);
        break;
      default:
        break;
    }
    len -= static_cast<int>(MNL_ALIGN(a->nla_len));
    a = mnl_attr_next(a);
  }
  asked.push_back("MODULE " + ifname + " " + std::to_string(address.value_or(0)) + " " +
                  std::to_string(bank.value_or(0)) + " " + std::to_string(page.value_or(0)) + " " +
                  std::to_string(offset.value_or(0)) + " " + std::to_string(length.value_or(0)));
  auto it = netdevs.find(ifname);
  if (it == netdevs.end()) return failure_reply(ENODEV, request);
  // net/ethtool/eeprom.c: the attributes it requires, its policy, and its
  // half-page rules.
  if (!offset || !length || !page || !address) return failure_reply(EINVAL, request);
  if (*offset > 255 || *length < 1 || *length > 128 || *address > 0x7F) {
    return failure_reply(ERANGE, request);
  }
  if (*page != 0 && *offset < 128) return failure_reply(EINVAL, request);
  if (*offset < 128 && *offset + *length > 128) return failure_reply(EINVAL, request);
  if (*offset + *length > 256) return failure_reply(EINVAL, request);
  const FakeEthnlNetdev& n = it->second;
  const bool upper = *offset >= 128;
  const module_eeprom::HalfKey key{*address, bank.value_or(0), upper ? *page : uint8_t{0}, upper};
  auto half = n.module.find(key);
  if (half == n.module.end()) return failure_reply(n.module_error, request);
  const std::size_t from = *offset % 128;
  if (from + *length > half->second.size()) return failure_reply(EIO, request);
  NlMessage m = genl(kFamily, ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY);
  header_nest(m, ETHTOOL_A_MODULE_EEPROM_HEADER, ifname);
  m.raw(ETHTOOL_A_MODULE_EEPROM_DATA, half->second.data() + from, *length);
  return reply_of({m.bytes(), ack_message()});
}

}  // namespace rdma_exporter::testing
