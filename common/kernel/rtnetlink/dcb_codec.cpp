#include "common/kernel/rtnetlink/dcb_codec.hpp"

#include <linux/dcbnl.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include "common/kernel/netlink/attributes.hpp"
#include "common/kernel/netlink/messages.hpp"

namespace rdma_exporter::dcb {
using namespace netlink;  // NOLINT(google-build-using-namespace)

namespace {

constexpr const char* kWhat = "RTM_GETDCB DCB_CMD_IEEE_GET";

// Copies a binary attribute into a kernel struct; the kernel sends
// sizeof(struct), a longer payload (a newer kernel's larger struct) keeps
// the known prefix.
template <typename T>
Result<T> struct_of(const nlattr* a, const char* name) {
  T out{};
  if (mnl_attr_get_payload_len(a) < sizeof(T)) {
    return malformed(std::string("attribute ") + name + " has " +
                     std::to_string(mnl_attr_get_payload_len(a)) + " bytes, expected " +
                     std::to_string(sizeof(T)));
  }
  std::memcpy(&out, mnl_attr_get_payload(a), sizeof(T));
  return out;
}

template <std::size_t N>
std::array<uint8_t, N> bytes_of(const __u8 (&in)[N]) {
  std::array<uint8_t, N> out{};
  std::copy(std::begin(in), std::end(in), out.begin());
  return out;
}

Status read_ieee(const nlattr* nest, IeeeConfig& out) {
  auto t = table_of_nest<DCB_ATTR_IEEE_MAX + 1>(nest, "DCB_ATTR_IEEE");
  if (!t) return t.error();
  if (const nlattr* a = (*t)[DCB_ATTR_IEEE_ETS]) {
    auto e = struct_of<ieee_ets>(a, "DCB_ATTR_IEEE_ETS");
    if (!e) return e.error();
    Ets ets;
    ets.willing = e->willing;
    ets.ets_cap = e->ets_cap;
    ets.cbs = e->cbs;
    ets.tc_tx_bw = bytes_of(e->tc_tx_bw);
    ets.tc_rx_bw = bytes_of(e->tc_rx_bw);
    ets.tc_tsa = bytes_of(e->tc_tsa);
    ets.prio_tc = bytes_of(e->prio_tc);
    out.ets = ets;
  }
  if (const nlattr* a = (*t)[DCB_ATTR_IEEE_PFC]) {
    auto p = struct_of<ieee_pfc>(a, "DCB_ATTR_IEEE_PFC");
    if (!p) return p.error();
    Pfc pfc;
    pfc.pfc_cap = p->pfc_cap;
    pfc.pfc_en = p->pfc_en;
    pfc.mbc = p->mbc;
    pfc.delay = p->delay;
    std::copy(std::begin(p->requests), std::end(p->requests), pfc.requests.begin());
    std::copy(std::begin(p->indications), std::end(p->indications), pfc.indications.begin());
    out.pfc = pfc;
  }
  if (const nlattr* table = (*t)[DCB_ATTR_IEEE_APP_TABLE]) {
    // Entries of other types (PCP rewrite entries of newer kernels) are not
    // APP entries in this sense and are skipped.
    return for_each_entry(table, DCB_ATTR_IEEE_APP, "DCB_ATTR_IEEE_APP_TABLE",
                          [&](const nlattr* e) -> Status {
                            auto app = struct_of<dcb_app>(e, "DCB_ATTR_IEEE_APP");
                            if (!app) return app.error();
                            out.apps.push_back(App{app->selector, app->priority, app->protocol});
                            return ok_status();
                          });
  }
  return ok_status();
}

}  // namespace

Bytes build_ieee_get(const std::string& ifname) {
  Bytes buf(256 + ifname.size());
  nlmsghdr* n = mnl_nlmsg_put_header(buf.data());
  n->nlmsg_type = RTM_GETDCB;
  n->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  auto* d = static_cast<dcbmsg*>(mnl_nlmsg_put_extra_header(n, sizeof(dcbmsg)));
  d->dcb_family = AF_UNSPEC;
  d->cmd = DCB_CMD_IEEE_GET;
  mnl_attr_put_strz(n, DCB_ATTR_IFNAME, ifname.c_str());
  buf.resize(n->nlmsg_len);
  return buf;
}

Result<IeeeConfig> decode_ieee(const Reply& reply) {
  std::optional<IeeeConfig> config;
  Status s = walk_messages(reply, RTM_GETDCB, kWhat, [&](const nlmsghdr& m) -> Status {
    if (config) return malformed(std::string("more than one answer to ") + kWhat);
    const std::size_t len = mnl_nlmsg_get_payload_len(&m);
    if (len < sizeof(dcbmsg)) return malformed("RTM_GETDCB message without its dcbmsg header");
    dcbmsg header{};
    std::memcpy(&header, mnl_nlmsg_get_payload(&m), sizeof header);
    if (header.cmd != DCB_CMD_IEEE_GET) {
      return malformed("RTM_GETDCB answer for command " + std::to_string(header.cmd));
    }
    const std::size_t offset = MNL_ALIGN(sizeof(dcbmsg));
    auto t =
        table_of<DCB_ATTR_MAX + 1>(static_cast<const uint8_t*>(mnl_nlmsg_get_payload(&m)) + offset,
                                   len - offset, "RTM_GETDCB");
    if (!t) return t.error();
    IeeeConfig c;
    Status fs = all(required(*t, DCB_ATTR_IFNAME, "DCB_ATTR_IFNAME", get_str, c.ifname),
                    optional(*t, DCB_ATTR_DCBX, "DCB_ATTR_DCBX", get_u8, c.dcbx));
    if (!fs) return fs;
    const nlattr* ieee = (*t)[DCB_ATTR_IEEE];
    if (ieee == nullptr) return malformed("missing attribute DCB_ATTR_IEEE");
    if (Status is = read_ieee(ieee, c); !is) return is;
    config = std::move(c);
    return ok_status();
  });
  if (!s) return s.error();
  if (!config) return malformed(std::string("no answer to ") + kWhat);
  return std::move(config).value();
}

}  // namespace rdma_exporter::dcb
