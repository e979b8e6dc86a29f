#pragma once

#include <optional>
#include <string>

#include "common/kernel/netdev/netlink_codec.hpp"
#include "common/kernel/netlink/transport.hpp"

namespace rdma_exporter::ethnl {

// Asks ethtool netlink about netdevs through a NETLINK_GENERIC transport.
// The family's id is looked up at the first request and kept. Errors carry
// the kernel's code: ENOENT when the kernel has no ethtool netlink (before
// Linux 5.6), ENODEV for a netdev that is not there, EOPNOTSUPP for what
// its driver does not give.
// What ethtool netlink answers when there is nothing to read, which is no
// failure: the driver does not give it (EOPNOTSUPP), the netdev is gone
// (ENODEV), the kernel has no ethtool netlink (ENOENT).
inline bool not_available(const Error& e) {
  return e.code == EOPNOTSUPP || e.code == ENODEV || e.code == ENOENT;
}

class Client {
 public:
  explicit Client(netlink::Transport& transport) : transport_(transport) {}

  Result<LinkState> linkstate(const std::string& ifname);
  Result<Fec> fec(const std::string& ifname);
  Result<Bytes> module_eeprom(const std::string& ifname, const EepromRead& read);

  // Whether the kernel has ethtool netlink: known once a lookup of the
  // family got an answer (true), or was refused with ENOENT (false).
  std::optional<bool> available() const { return available_; }

 private:
  Result<uint16_t> family();
  // Sends build(family) and decodes the reply with decode(reply, family).
  template <typename Build, typename Decode>
  auto ask(Build&& build, Decode&& decode) -> decltype(decode(netlink::Reply{}, uint16_t{}));

  netlink::Transport& transport_;
  std::optional<uint16_t> family_;
  std::optional<bool> available_;
};

}  // namespace rdma_exporter::ethnl
