#include "collectors/kernel/ethtool/netlink_client.hpp"

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

Result<LinkState> Client::linkstate(const std::string& ifname) {
  auto id = family();
  if (!id) return id.error();
  const Bytes request = build_linkstate_get(*id, ifname);
  auto reply = transport_.exchange(request);
  if (!reply) return reply.error();
  return decode_linkstate(*reply, *id);
}

Result<Fec> Client::fec(const std::string& ifname) {
  auto id = family();
  if (!id) return id.error();
  const Bytes request = build_fec_get(*id, ifname);
  auto reply = transport_.exchange(request);
  if (!reply) return reply.error();
  return decode_fec(*reply, *id);
}

Result<Bytes> Client::module_eeprom(const std::string& ifname, const EepromRead& read) {
  auto id = family();
  if (!id) return id.error();
  const Bytes request = build_module_eeprom_get(*id, ifname, read);
  auto reply = transport_.exchange(request);
  if (!reply) return reply.error();
  return decode_module_eeprom(*reply, *id, read);
}

}  // namespace rdma_exporter::ethnl
