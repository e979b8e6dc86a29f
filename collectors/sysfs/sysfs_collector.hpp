#pragma once

#include <filesystem>

#include "collectors/collector.hpp"
#include "collectors/kernel/sysfs/reader.hpp"

namespace rdma_exporter {

// What only sysfs (<root>/class/infiniband) carries:
//   rdma_device_hardware_info          fw_ver, board_id, hca_type, node_desc
//   rdma_device_hw_<name>_total        device-level hw_counters/ (mlx4, efa, hfi1, ...)
//   rdma_port_rate_bytes_per_second    ports/<n>/rate
//   rdma_port_link_layer_info          ports/<n>/link_layer
//   rdma_port_pma_<name>_total         ports/<n>/counters/ (IB PMA); the data
//                                      counters count 4-byte words and are
//                                      exported as rdma_port_pma_<name>_bytes_total
//   rdma_exporter_sysfs_unavailable_values  files the kernel declined to
//                                      read (EINVAL, "N/A (no PMA)"), skipped
// Port hw_counters/ are not read here: the hw_counters collector has the
// same values from netlink, and reads them here where netlink cannot.
class SysfsCollector final : public Collector {
 public:
  explicit SysfsCollector(std::filesystem::path sysfs_root) : reader_(std::move(sysfs_root)) {}
  std::string_view name() const override { return "sysfs"; }
  std::vector<std::string> collect(Scrape& scrape, MetricSink& sink) override;

 private:
  sysfs::Reader reader_;
};

// Metric name of an IB PMA counter file.
std::string pma_counter_metric(std::string_view file_name);
// Multiplier that turns a PMA counter's raw value into the exported unit.
double pma_counter_scale(std::string_view file_name);

}  // namespace rdma_exporter
