#pragma once

#include "collectors/collector.hpp"
#include "collectors/dcb/options.hpp"
#include "common/kernel/netlink/transport.hpp"

namespace rdma_exporter {

// The QoS configuration of the netdev behind every RDMA port, from
// rtnetlink's DCB interface (RTM_GETDCB, DCB_CMD_IEEE_GET): which priorities
// have PFC, the priority-to-traffic-class map, ETS bandwidth shares and
// selection algorithms, the trust mode the APP table implies, and the DCBX
// mode. A netdev without DCB (veth, the kernel answers EOPNOTSUPP) gives
// nothing and no error.
class DcbCollector final : public Collector {
 public:
  // `route` is a NETLINK_ROUTE transport.
  DcbCollector(netlink::Transport& route, const DcbOptions& options)
      : route_(route), options_(options) {}

  std::string_view name() const override { return "dcb"; }
  std::vector<std::string> collect(Scrape& scrape, MetricSink& sink) override;

 private:
  netlink::Transport& route_;
  DcbOptions options_;
};

}  // namespace rdma_exporter
