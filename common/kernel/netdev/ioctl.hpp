#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "common/result.hpp"

namespace rdma_exporter::ethtool {

// The SIOCETHTOOL ioctl: `command` holds an ethtool command structure
// (struct ethtool_drvinfo, ethtool_sset_info, ethtool_gstrings,
// ethtool_stats, ...) that the kernel fills in place. Tests put a fake here
// that writes the kernel's layouts into the buffer.
class Ioctl {
 public:
  virtual ~Ioctl() = default;
  virtual Status call(const std::string& ifname, std::span<uint8_t> command) = 0;
};

// The real kernel, through a datagram socket opened on first use.
class SocketIoctl final : public Ioctl {
 public:
  SocketIoctl() = default;
  ~SocketIoctl() override;
  SocketIoctl(const SocketIoctl&) = delete;
  SocketIoctl& operator=(const SocketIoctl&) = delete;

  Status call(const std::string& ifname, std::span<uint8_t> command) override;

 private:
  int fd_ = -1;
};

}  // namespace rdma_exporter::ethtool
