#include "collectors/pcie/pcie_collector.hpp"

#include "collectors/registry.hpp"

namespace rdma_exporter {
namespace {

void add_aer(MetricSink& sink, const Labels& base, const char* severity,
             const std::optional<sysfs::AerCounts>& counts) {
  if (!counts) return;
  for (const auto& e : counts->errors) {
    // The kernel lists every error the AER capability defines, nearly all 0
    // for a device's life: a series each would be 44 per device. An error
    // gets its series once counted; the messages' total is always there.
    if (e.value == 0) continue;
    Labels labels = base;
    labels.emplace_back("aer_severity", severity);
    labels.emplace_back("error", e.name);
    sink.counter("rdma_pcie_aer_errors_total",
                 "PCIe errors of the RDMA device's PCI function by AER severity and error, as the "
                 "kernel names them (aer_dev_correctable, aer_dev_nonfatal, aer_dev_fatal).",
                 std::move(labels), static_cast<double>(e.value));
  }
  if (counts->messages) {
    Labels labels = base;
    labels.emplace_back("aer_severity", severity);
    sink.counter("rdma_pcie_aer_messages_total",
                 "AER error messages the RDMA device's PCI function sent, by severity (the AER "
                 "files' TOTAL_ERR_* lines; one message may report several errors).",
                 std::move(labels), static_cast<double>(*counts->messages));
  }
}

}  // namespace

std::vector<std::string> PcieCollector::collect(Scrape& scrape, MetricSink& sink) {
  auto names = reader_.device_names();
  if (!names) return {names.error().message};
  std::vector<std::string> errors;
  for (const auto& name : *names) {
    if (!scrape.filter().allows(name)) continue;
    sysfs::ReadNotes notes;
    const auto function = reader_.read_pci_function(name, notes);
    errors.insert(errors.end(), notes.problems.begin(), notes.problems.end());
    if (!function) continue;
    sink.info("rdma_device_pci_info",
              "The PCI function of the RDMA device and, for a virtual function, its physical "
              "function, whose link the rdma_pcie_link_* series of the device show; the value is "
              "always 1.",
              {{"device", name},
               {"pci_address", function->address},
               {"physical_function", function->physical_function}});
    const Labels base{{"device", name}, {"pci_address", function->address}};
    const sysfs::PciLink& link = function->link;
    if (link.speed_transfers_per_second) {
      sink.gauge("rdma_pcie_link_speed_transfers_per_second",
                 "Speed the PCIe link of the RDMA device trained to, in transfers per second per "
                 "lane (current_link_speed).",
                 base, *link.speed_transfers_per_second);
    }
    if (link.max_speed_transfers_per_second) {
      sink.gauge("rdma_pcie_link_max_speed_transfers_per_second",
                 "Highest PCIe link speed the RDMA device supports, in transfers per second per "
                 "lane (max_link_speed).",
                 base, *link.max_speed_transfers_per_second);
    }
    if (link.width_lanes) {
      sink.gauge("rdma_pcie_link_width_lanes",
                 "Lanes the PCIe link of the RDMA device trained to (current_link_width).", base,
                 *link.width_lanes);
    }
    if (link.max_width_lanes) {
      sink.gauge("rdma_pcie_link_max_width_lanes",
                 "Lanes the RDMA device supports (max_link_width).", base, *link.max_width_lanes);
    }
    add_aer(sink, base, "correctable", function->correctable);
    add_aer(sink, base, "nonfatal", function->nonfatal);
    add_aer(sink, base, "fatal", function->fatal);
  }
  return errors;
}

CollectorEntry pcie_entry() {
  CollectorEntry e;
  e.name = "pcie";
  e.help =
      "PCIe link speed and width against their maxima, and AER error counts, of each RDMA "
      "device's PCI function, from sysfs.";
  e.reads_rdma_netlink = false;
  e.make = [](const CollectorContext& c) { return std::make_unique<PcieCollector>(c.sysfs_root); };
  return e;
}

}  // namespace rdma_exporter
