#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/kernel/netdev/ioctl.hpp"
#include "common/kernel/netdev/module_eeprom.hpp"
#include "common/kernel/netdev/netlink_client.hpp"

namespace rdma_exporter::module_eeprom {

// What one read of a netdev's module gave: the halves, how they were read
// ("netlink" or "ioctl"), and the halves that could not be read, with why.
struct Read {
  Image image;
  std::string via;
  std::vector<std::string> problems;
};

// Reads the memory of the module plugged into a netdev: the lower page,
// then the halves it calls for (halves_to_read), 128 bytes per request,
// through ethtool netlink's MODULE_EEPROM_GET. Where the kernel lacks it
// (before Linux 5.13, or no ethtool netlink), through the legacy
// ETHTOOL_GMODULEINFO and ETHTOOL_GMODULEEEPROM ioctls, which give SFF-8079,
// SFF-8472 and SFF-8636 images (no CMIS pages). Errors carry the kernel's
// code: EOPNOTSUPP both ways for a netdev without a module to read (virtual
// devices, drivers without module access).
class Reader {
 public:
  // Either may be null.
  Reader(netlink::Transport* generic, ethtool::Ioctl* ioctl) : ioctl_(ioctl) {
    if (generic != nullptr) ethnl_.emplace(*generic);
  }
  Result<Read> read(const std::string& ifname);

 private:
  Result<Read> read_netlink(const std::string& ifname);
  Result<Read> read_ioctl(const std::string& ifname);

  std::optional<ethnl::Client> ethnl_;
  ethtool::Ioctl* ioctl_;
};

}  // namespace rdma_exporter::module_eeprom
