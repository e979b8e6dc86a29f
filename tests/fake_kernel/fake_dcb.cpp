#include "tests/fake_kernel/fake_dcb.hpp"

#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cstring>

namespace rdma_exporter::testing {
Bytes dcb_ieee_message(const std::string& ifname, const FakeDcbNetdev& n, uint16_t flags) {
  dcbmsg header{};
  header.dcb_family = AF_UNSPEC;
  header.cmd = DCB_CMD_IEEE_GET;
  NlMessage m(RTM_GETDCB, flags);
  m.family_header(&header, sizeof header);
  m.str(DCB_ATTR_IFNAME, ifname);
  m.begin_nest(DCB_ATTR_IEEE);
  if (n.ets) m.raw(DCB_ATTR_IEEE_ETS, &*n.ets, sizeof(ieee_ets));
  if (n.pfc) m.raw(DCB_ATTR_IEEE_PFC, &*n.pfc, sizeof(ieee_pfc));
  m.begin_nest(DCB_ATTR_IEEE_APP_TABLE);
  for (const auto& app : n.apps) m.raw(DCB_ATTR_IEEE_APP, &app, sizeof app);
  m.end_nest();
  m.end_nest();
  if (n.dcbx) m.u8(DCB_ATTR_DCBX, *n.dcbx);
  return m.bytes();
}

FakeDcbNetdev mlx5_dcb() {
  FakeDcbNetdev n;
  ieee_ets ets{};
  ets.ets_cap = 8;
  ets.tc_tsa[0] = IEEE_8021QAZ_TSA_ETS;
  ets.tc_tx_bw[0] = 50;
  ets.tc_tsa[3] = IEEE_8021QAZ_TSA_ETS;
  ets.tc_tx_bw[3] = 50;
  ets.tc_tsa[6] = IEEE_8021QAZ_TSA_STRICT;
  for (int tc : {1, 2, 4, 5, 7}) ets.tc_tsa[tc] = IEEE_8021QAZ_TSA_ETS;
  for (int p = 0; p < 8; ++p) ets.prio_tc[p] = 0;
  ets.prio_tc[3] = 3;
  ets.prio_tc[6] = 6;
  n.ets = ets;
  ieee_pfc pfc{};
  pfc.pfc_cap = 8;
  pfc.pfc_en = 1U << 3;
  n.pfc = pfc;
  for (uint16_t dscp = 0; dscp < 64; ++dscp) {
    n.apps.push_back(dcb_app{IEEE_8021QAZ_APP_SEL_DSCP, static_cast<uint8_t>(dscp / 8), dscp});
  }
  n.dcbx = DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE;
  return n;
}

// dcb_doit(): the dcbmsg header and DCB_ATTR_IFNAME are required (EINVAL),
// an unknown name is ENODEV, a netdev without dcbnl_ops EOPNOTSUPP. The
// answer carries the request's flags, and the ACK follows when asked for.
Result<netlink::Reply> FakeDcb::exchange(std::span<const uint8_t> request) {
  const auto* nlh = reinterpret_cast<const nlmsghdr*>(request.data());
  if (request.size() < sizeof(nlmsghdr) || nlh->nlmsg_type != RTM_GETDCB ||
      mnl_nlmsg_get_payload_len(nlh) < sizeof(dcbmsg)) {
    return failure_reply(EINVAL, request);
  }
  dcbmsg header{};
  std::memcpy(&header, mnl_nlmsg_get_payload(nlh), sizeof header);
  std::optional<std::string> ifname;
  const auto* a = static_cast<const nlattr*>(mnl_nlmsg_get_payload_offset(nlh, sizeof header));
  int len = static_cast<int>(mnl_nlmsg_get_payload_len(nlh) - MNL_ALIGN(sizeof header));
  while (mnl_attr_ok(a, len)) {
    if (mnl_attr_get_type(a) == DCB_ATTR_IFNAME && mnl_attr_validate(a, MNL_TYPE_NUL_STRING) == 0) {
      ifname = mnl_attr_get_str(a);
    }
    len -= static_cast<int>(MNL_ALIGN(a->nla_len));
    a = mnl_attr_next(a);
  }
  if (!ifname) return failure_reply(EINVAL, request);
  asked.push_back(*ifname);
  auto it = netdevs.find(*ifname);
  if (it == netdevs.end()) return failure_reply(ENODEV, request);
  if (!it->second.dcb) return failure_reply(EOPNOTSUPP, request);
  if (header.cmd != DCB_CMD_IEEE_GET) return failure_reply(EOPNOTSUPP, request);
  netlink::Reply r;
  r.datagrams.push_back(dcb_ieee_message(*ifname, it->second, nlh->nlmsg_flags));
  if ((nlh->nlmsg_flags & NLM_F_ACK) != 0) r.datagrams.push_back(ack_message());
  return r;
}

}  // namespace rdma_exporter::testing
