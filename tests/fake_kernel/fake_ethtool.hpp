#pragma once

// A fake SIOCETHTOOL behind the ethtool::Ioctl interface, and builders of the
// kernel's answers in the real struct layouts (<linux/ethtool.h>): the bytes
// the kernel copies back into the caller's buffer.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/kernel/netdev/ioctl.hpp"

namespace rdma_exporter::testing {

using Bytes = std::vector<uint8_t>;

// struct ethtool_drvinfo with `driver` and n_stats.
Bytes drvinfo_answer(const std::string& driver, uint32_t n_stats);
// struct ethtool_sset_info for ETH_SS_STATS; no count: the bit cleared.
Bytes stats_count_answer(std::optional<uint32_t> count);
// struct ethtool_gstrings with `names` (each in ETH_GSTRING_LEN bytes) and
// `room` names of space in all.
Bytes stat_names_answer(const std::vector<std::string>& names, std::size_t room);
// struct ethtool_stats with `values` and `room` values of space in all.
Bytes stat_values_answer(const std::vector<uint64_t>& values, std::size_t room);

struct FakeNetdev {
  std::string driver;
  std::vector<std::pair<std::string, uint64_t>> stats;
  bool has_stats = true;  // false: the driver has no ETH_SS_STATS set
  int error = 0;          // errno every ioctl on it answers with
  // This many statistics appear right after the next ETHTOOL_GSSET_INFO (a
  // driver reconfigured between the calls).
  std::size_t grow_after_count = 0;
  // ETHTOOL_GMODULEINFO and GMODULEEEPROM: the module's ETH_MODULE_SFF_*
  // type and flat image; type 0 answers EOPNOTSUPP (no module access).
  uint32_t module_type = 0;
  Bytes module_eeprom;
};

// Answers ETHTOOL_GDRVINFO, GSSET_INFO, GSTRINGS, GSTATS, GMODULEINFO and
// GMODULEEEPROM like the kernel:
// ENODEV for an unknown name, EOPNOTSUPP for other commands. An answer larger
// than the caller's buffer fails the call with EFAULT (the real kernel would
// write past it).
class FakeEthtool final : public ethtool::Ioctl {
 public:
  std::map<std::string, FakeNetdev> netdevs;
  std::vector<std::pair<std::string, uint32_t>> calls;  // (netdev, ethtool command)

  Status call(const std::string& ifname, std::span<uint8_t> command) override;
};

// A veth's statistics as Debian 12's kernel lists them (ethtool -S veth0).
FakeNetdev veth_netdev();

}  // namespace rdma_exporter::testing
