#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <unordered_map>

#include "collectors/collector.hpp"
#include "common/kernel/sys/reader.hpp"

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
// The reader keeps the files open between collections; metric names and
// HELP texts are made once per counter file name.
class SysfsCollector final : public Collector {
 public:
  explicit SysfsCollector(const std::filesystem::path& sysfs_root) : reader_(sysfs_root) {}
  std::string_view name() const override { return "sysfs"; }
  std::vector<std::string> collect(Scrape& scrape, MetricSink& sink) override;

 private:
  struct Prepared {
    std::string metric;
    std::string help;
    double scale = 1.0;
  };
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using PreparedMap = std::unordered_map<std::string, Prepared, NameHash, std::equal_to<>>;
  const Prepared& pma(const std::string& file_name);
  const Prepared& device_hw(const std::string& file_name);

  sysfs::Reader reader_;
  PreparedMap pma_;
  PreparedMap device_hw_;
};

// The process-wide state of the sysfs files kept open (every reader's):
//   rdma_exporter_sysfs_open_files       files held open now
//   rdma_exporter_sysfs_uncached_files   files read with open/read/close
//                                        because the open-file budget ran out
// Added by the daemon with its own telemetry.
void add_sysfs_file_metrics(MetricSink& sink);

// Metric name of an IB PMA counter file.
std::string pma_counter_metric(std::string_view file_name);
// Multiplier that turns a PMA counter's raw value into the exported unit.
double pma_counter_scale(std::string_view file_name);

}  // namespace rdma_exporter
