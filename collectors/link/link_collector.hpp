#pragma once

#include <filesystem>

#include "collectors/collector.hpp"
#include "common/kernel/netdev/net_reader.hpp"
#include "common/kernel/netdev/netlink_client.hpp"

namespace rdma_exporter {

// The link of the network device behind each RoCE or iWARP port, from sysfs
// (/sys/class/net/<netdev>/):
//   rdma_netdev_carrier                     carrier: 1 up, 0 down
//   rdma_netdev_carrier_up_changes_total    carrier_up_count
//   rdma_netdev_carrier_down_changes_total  carrier_down_count
// and from ethtool netlink (ETHTOOL_MSG_LINKSTATE_GET, ETHTOOL_MSG_FEC_GET):
//   rdma_netdev_link_ext_state_info         why the link is down, as the driver says
//   rdma_netdev_link_down_events_total      the driver's link-down count
//   rdma_netdev_fec_mode_info               the FEC mode in use
//   rdma_netdev_fec_{corrected_blocks,uncorrectable_blocks,corrected_bits}_total
//   rdma_netdev_fec_lane_..._total{lane}    the same per lane, where counted
//   rdma_exporter_ethtool_netlink_available whether the kernel has ethtool netlink
// The counts see a flap that starts and ends between two scrapes, which the
// port state cannot. InfiniBand ports have no netdev and no series here.
// What a driver does not give (EOPNOTSUPP) is left out quietly.
class LinkCollector final : public Collector {
 public:
  // `generic`: a NETLINK_GENERIC transport, or null to read sysfs only.
  LinkCollector(const std::filesystem::path& sysfs_root, netlink::Transport* generic)
      : net_(sysfs_root) {
    if (generic != nullptr) ethnl_.emplace(*generic);
  }
  std::string_view name() const override { return "link"; }
  std::vector<std::string> collect(Scrape& scrape, MetricSink& sink) override;

 private:
  struct Read {
    std::optional<sysfs::Carrier> carrier;
    std::optional<ethnl::LinkState> state;
    std::optional<ethnl::Fec> fec;
  };
  Read read(const std::string& netdev, std::vector<std::string>& errors);

  sysfs::NetReader net_;
  std::optional<ethnl::Client> ethnl_;
};

}  // namespace rdma_exporter
