#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/kernel/netdev/ioctl.hpp"
#include "common/result.hpp"

namespace rdma_exporter::ethtool {

// A netdev's driver statistics (`ethtool -S`): names[i] has values[i].
// Driver-private statistics such as mlx5's per-priority counters exist only
// here, not in ethtool netlink's standard statistics.
struct DriverStats {
  std::string driver;  // empty when the netdev names none
  std::vector<std::string> names;
  std::vector<uint64_t> values;
};

// Reads the driver name and every statistic: ETHTOOL_GDRVINFO,
// ETHTOOL_GSSET_INFO (how many), ETHTOOL_GSTRINGS (names), ETHTOOL_GSTATS
// (values). A driver without statistics gives empty lists. When the set
// changes between the calls (channels reconfigured) the read starts again, a
// few times at most. Errors carry the errno of the failing ioctl.
Result<DriverStats> read_driver_stats(Ioctl& ioctl, const std::string& ifname);

}  // namespace rdma_exporter::ethtool
