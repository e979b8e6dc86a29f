#pragma once

#include <filesystem>

#include "collectors/collector.hpp"
#include "collectors/kernel/sysfs/net_reader.hpp"

namespace rdma_exporter {

// The link of the network device behind each RoCE or iWARP port, from sysfs
// (/sys/class/net/<netdev>/):
//   rdma_netdev_carrier                     carrier: 1 up, 0 down
//   rdma_netdev_carrier_up_changes_total    carrier_up_count
//   rdma_netdev_carrier_down_changes_total  carrier_down_count
// The counts see a flap that starts and ends between two scrapes, which the
// port state cannot. InfiniBand ports have no netdev and no series here.
class LinkCollector final : public Collector {
 public:
  explicit LinkCollector(const std::filesystem::path& sysfs_root) : net_(sysfs_root) {}
  std::string_view name() const override { return "link"; }
  std::vector<std::string> collect(Scrape& scrape, MetricSink& sink) override;

 private:
  sysfs::NetReader net_;
};

}  // namespace rdma_exporter
