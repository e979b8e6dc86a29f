#pragma once

#include <filesystem>
#include <string>
#include <unordered_map>
#include <utility>

#include "collectors/collector.hpp"
#include "collectors/hw_counters/options.hpp"
#include "common/kernel/sys/reader.hpp"

namespace rdma_exporter {

// The default counter of every port: all hw counters the driver reports, as
// rdma_port_hw_<kernel name>_total{device,port}. These totals already include
// every per-QP counter set bound on the port and the history of freed ones.
//
// Read through rdma netlink (RDMA_NLDEV_CMD_STAT_GET with device and port),
// which also lists enabled optional counters. Where netlink cannot give a
// port's counters (no rdma netlink, the device list failing, STAT_GET
// failing for that port), they are read from the port's sysfs hw_counters/
// directory, which holds the same counters with the same values except
// optional ones. rdma_port_hw_source_info{device,port,source} says which
// source each port's counters came from.
class HwCountersCollector final : public Collector {
 public:
  // Metric name and HELP text of each kernel counter name, made once.
  using MetricNames = std::unordered_map<std::string, std::pair<std::string, std::string>>;

  HwCountersCollector(const std::filesystem::path& sysfs_root, HwCountersOptions options)
      : reader_(sysfs_root), options_(options) {}
  std::string_view name() const override { return "hw_counters"; }
  std::vector<std::string> collect(Scrape& scrape, MetricSink& sink) override;

 private:
  sysfs::Reader reader_;
  HwCountersOptions options_;
  MetricNames names_;
};

// "rdma_port_hw_<name>_total" for a kernel counter name.
std::string port_hw_counter_metric(std::string_view kernel_name);

}  // namespace rdma_exporter
