#pragma once

#include "collectors/collector.hpp"

namespace rdma_exporter {

// The default counter of every port through rdma netlink
// (RDMA_NLDEV_CMD_STAT_GET with device and port): all hw counters the driver
// reports, including enabled optional counters, as
// rdma_port_hw_<kernel name>_total{device,port}. These totals already include
// every per-QP counter set bound on the port and the history of freed ones.
class HwCountersCollector final : public Collector {
 public:
  std::string_view name() const override { return "hw_counters"; }
  std::vector<std::string> collect(Scrape& scrape, MetricSink& sink) override;
};

// "rdma_port_hw_<name>_total" for a kernel counter name.
std::string port_hw_counter_metric(std::string_view kernel_name);

}  // namespace rdma_exporter
