#pragma once

#include <chrono>
#include <memory>

#include "common/kernel/netdev/ioctl.hpp"
#include "common/kernel/netlink/transport.hpp"

namespace rdma_exporter {

// The kernel interfaces the collectors read (and, opt-in, write) through.
// Tests put fakes here.
struct KernelInterfaces {
  std::unique_ptr<netlink::Transport> rdma;     // NETLINK_RDMA (nldev)
  std::unique_ptr<netlink::Transport> route;    // NETLINK_ROUTE (DCB)
  std::unique_ptr<ethtool::Ioctl> ethtool;      // SIOCETHTOOL
  std::unique_ptr<netlink::Transport> generic;  // NETLINK_GENERIC (ethtool netlink); may be null
  // The transceiver collector's own, used from its reading thread only, so
  // that a slow module read never holds the others; either may be null.
  std::unique_ptr<netlink::Transport> module_generic;
  std::unique_ptr<ethtool::Ioctl> module_ioctl;

  // The running kernel's; a netlink reply must arrive within `netlink_timeout`.
  static KernelInterfaces real(std::chrono::milliseconds netlink_timeout);
};

}  // namespace rdma_exporter
