#include "common/kernel/netdev/netlink_client.hpp"

namespace rdma_exporter::ethnl {

Result<uint16_t> Client::family() {
  if (family_) return *family_;
  const Bytes request = build_get_family();
  auto reply = transport_.exchange(request);
  if (!reply) return reply.error();
  auto id = decode_family(*reply);
  if (!id) {
    if (id.error().code == ENOENT) {
      available_ = false;
      return Error{ENOENT, "this kernel has no ethtool netlink (Linux 5.6 and later have it)"};
    }
    return id.error();
  }
  family_ = *id;
  available_ = true;
  return *id;
}

template <typename Build, typename Decode>
auto Client::ask(Build&& build, Decode&& decode) -> decltype(decode(netlink::Reply{}, uint16_t{})) {
  auto id = family();
  if (!id) return id.error();
  const Bytes request = build(*id);
  auto reply = transport_.exchange(request);
  if (!reply) return reply.error();
  return decode(*reply, *id);
}

Result<LinkState> Client::linkstate(const std::string& ifname) {
  return ask([&](uint16_t f) { return build_linkstate_get(f, ifname); }, decode_linkstate);
}

Result<Fec> Client::fec(const std::string& ifname) {
  return ask([&](uint16_t f) { return build_fec_get(f, ifname); }, decode_fec);
}

Result<Bytes> Client::module_eeprom(const std::string& ifname, const EepromRead& read) {
  return ask([&](uint16_t f) { return build_module_eeprom_get(f, ifname, read); },
             [&](const netlink::Reply& r, uint16_t f) { return decode_module_eeprom(r, f, read); });
}

}  // namespace rdma_exporter::ethnl
