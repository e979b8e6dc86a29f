#pragma once

#include <map>
#include <string>
#include <vector>

#include "collectors/collector.hpp"
#include "collectors/ethtool/mapping.hpp"
#include "collectors/ethtool/options.hpp"
#include "common/kernel/netdev/ioctl.hpp"
#include "common/pattern.hpp"

namespace rdma_exporter {

// NIC counters per priority (PFC pauses, bytes, packets, discards, ECN
// marks) of the netdev behind every RDMA port, from the driver's ethtool
// statistics (SIOCETHTOOL: ETHTOOL_GDRVINFO, GSSET_INFO, GSTRINGS, GSTATS)
// mapped to rdma_netdev_* metrics by the tables in mapping.cpp and the
// configured mappings; with ethtool.raw_stats also every statistic as it is.
// A driver without statistics or mappings gives nothing and no error.
class EthtoolCollector final : public Collector {
 public:
  // `options` was checked with the configuration.
  EthtoolCollector(ethtool::Ioctl& ioctl, const EthtoolOptions& options);

  std::string_view name() const override { return "ethtool"; }
  std::vector<std::string> collect(Scrape& scrape, MetricSink& sink) override;

 private:
  // Where each statistic of a netdev goes, kept while the driver and its
  // statistic names stay the same: matching patterns is the costly part.
  struct Layout {
    std::string driver;
    std::vector<std::string> names;
    std::vector<ethtool::Target> targets;
    std::vector<bool> raw;  // exported by raw_stats
  };
  const Layout& layout_for(const std::string& netdev, const std::string& driver,
                           const std::vector<std::string>& names);

  ethtool::Ioctl& ioctl_;
  ethtool::StatMapper mapper_;
  bool raw_stats_;
  std::vector<Pattern> raw_include_;
  std::map<std::string, Layout> layouts_;
};

}  // namespace rdma_exporter
