#pragma once

#include <filesystem>

#include "collectors/collector.hpp"
#include "common/kernel/sys/reader.hpp"

namespace rdma_exporter {

// The PCI function behind each RDMA device, from sysfs (<dev>/device):
//   rdma_device_pci_info                          the function's address, and
//                                                 a virtual function's
//                                                 physical function
//   rdma_pcie_link_speed_transfers_per_second     current_link_speed
//   rdma_pcie_link_max_speed_transfers_per_second max_link_speed
//   rdma_pcie_link_width_lanes                    current_link_width
//   rdma_pcie_link_max_width_lanes                max_link_width
//   rdma_pcie_aer_errors_total                    aer_dev_{correctable,nonfatal,fatal},
//                                                 errors counted at least once
//   rdma_pcie_aer_messages_total                  their TOTAL_ERR_* lines
// A link below its maximum has trained down (a bad slot, riser or card, or
// a card in a narrower slot). Devices without a PCI function (Soft-RoCE)
// and files the function lacks leave their series out.
class PcieCollector final : public Collector {
 public:
  explicit PcieCollector(const std::filesystem::path& sysfs_root) : reader_(sysfs_root) {}
  std::string_view name() const override { return "pcie"; }
  std::vector<std::string> collect(Scrape& scrape, MetricSink& sink) override;

 private:
  sysfs::Reader reader_;
};

}  // namespace rdma_exporter
