#include "common/kernel/interfaces.hpp"

#include <linux/netlink.h>

#include "common/kernel/netlink/socket_transport.hpp"

namespace rdma_exporter {

KernelInterfaces KernelInterfaces::real(std::chrono::milliseconds netlink_timeout) {
  KernelInterfaces k;
  k.rdma = std::make_unique<netlink::SocketTransport>(netlink_timeout);
  k.route =
      std::make_unique<netlink::SocketTransport>(netlink_timeout, NETLINK_ROUTE, "NETLINK_ROUTE");
  k.ethtool = std::make_unique<ethtool::SocketIoctl>();
  k.generic = std::make_unique<netlink::SocketTransport>(netlink_timeout, NETLINK_GENERIC,
                                                         "NETLINK_GENERIC");
  k.module_generic = std::make_unique<netlink::SocketTransport>(netlink_timeout, NETLINK_GENERIC,
                                                                "NETLINK_GENERIC");
  k.module_ioctl = std::make_unique<ethtool::SocketIoctl>();
  return k;
}

}  // namespace rdma_exporter
