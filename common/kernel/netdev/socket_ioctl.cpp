#include <linux/netlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/kernel/netdev/ioctl.hpp"

namespace rdma_exporter::ethtool {

SocketIoctl::~SocketIoctl() {
  if (fd_ >= 0) ::close(fd_);
}

Status SocketIoctl::call(const std::string& ifname, std::span<uint8_t> command) {
  if (ifname.empty() || ifname.size() >= IFNAMSIZ) {
    return Error{EINVAL, "SIOCETHTOOL: \"" + ifname + "\" is not a network interface name"};
  }
  if (fd_ < 0) {
    // Any socket serves for SIOCETHTOOL; ethtool(8) falls back the same way
    // on hosts without IPv4.
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) fd_ = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
    if (fd_ < 0) return Error::system(errno, "open a socket for SIOCETHTOOL");
  }
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, ifname.data(), ifname.size());
  ifr.ifr_data = reinterpret_cast<char*>(command.data());
  if (::ioctl(fd_, SIOCETHTOOL, &ifr) < 0) {
    return Error::system(errno, "SIOCETHTOOL on " + ifname);
  }
  return ok_status();
}

}  // namespace rdma_exporter::ethtool
