#include "collectors/sysfs/sysfs_collector.hpp"

#include "collectors/registry.hpp"

namespace rdma_exporter {
namespace {

// PMA data counters (PortXmitData, PortRcvData and their extended forms)
// count octets divided by 4.
bool is_pma_data_counter(std::string_view name) {
  return name == "port_xmit_data" || name == "port_rcv_data" || name == "port_xmit_data_64" ||
         name == "port_rcv_data_64";
}

}  // namespace

std::string pma_counter_metric(std::string_view file_name) {
  return "rdma_port_pma_" + sanitize_metric_fragment(file_name) +
         (is_pma_data_counter(file_name) ? "_bytes_total" : "_total");
}

double pma_counter_scale(std::string_view file_name) {
  return is_pma_data_counter(file_name) ? 4.0 : 1.0;
}

const SysfsCollector::Prepared& SysfsCollector::pma(const std::string& file_name) {
  auto it = pma_.find(file_name);
  if (it != pma_.end()) return it->second;
  Prepared p{
      pma_counter_metric(file_name),
      "InfiniBand PMA port counter \"" + file_name + "\" from sysfs" +
          (is_pma_data_counter(file_name) ? ", in bytes (the kernel counts 4-byte words)." : "."),
      pma_counter_scale(file_name)};
  return pma_.emplace(file_name, std::move(p)).first->second;
}

const SysfsCollector::Prepared& SysfsCollector::device_hw(const std::string& file_name) {
  auto it = device_hw_.find(file_name);
  if (it != device_hw_.end()) return it->second;
  Prepared p{"rdma_device_hw_" + sanitize_metric_fragment(file_name) + "_total",
             "Device-level hw counter \"" + file_name + "\" of the driver, from sysfs.", 1.0};
  return device_hw_.emplace(file_name, std::move(p)).first->second;
}

std::vector<std::string> SysfsCollector::collect(Scrape& scrape, MetricSink& sink) {
  auto names = reader_.device_names();
  if (!names) return {names.error().message};
  std::vector<std::string> errors;
  std::size_t unavailable = 0;
  for (const auto& name : *names) {
    if (!scrape.filter().allows(name)) continue;
    sysfs::ReadNotes notes;
    const std::optional<sysfs::Device> device = reader_.read_device(name, notes);
    unavailable += notes.unavailable;
    errors.insert(errors.end(), notes.problems.begin(), notes.problems.end());
    if (!device) continue;
    const sysfs::Device& d = *device;

    sink.info("rdma_device_hardware_info",
              "RDMA device identity files from sysfs; the value is always 1.",
              {{"device", d.name},
               {"fw_version", d.fw_ver.value_or("")},
               {"board_id", d.board_id.value_or("")},
               {"hca_type", d.hca_type.value_or("")},
               {"node_desc", d.node_desc.value_or("")}});
    for (const auto& c : d.hw_counters) {
      const Prepared& m = device_hw(c.name);
      sink.counter(m.metric, m.help, {{"device", d.name}}, static_cast<double>(c.value));
    }
    for (const auto& p : d.ports) {
      const Labels base{{"device", d.name}, {"port", std::to_string(p.index)}};
      if (p.rate_bytes_per_second) {
        sink.gauge("rdma_port_rate_bytes_per_second",
                   "Port data rate the link trained to, in bytes per second.", base,
                   *p.rate_bytes_per_second);
      }
      if (p.link_layer) {
        Labels info = base;
        info.emplace_back("link_layer", *p.link_layer);
        sink.info("rdma_port_link_layer_info",
                  "Link layer of the port (InfiniBand or Ethernet); the value is always 1.",
                  std::move(info));
      }
      for (const auto& c : p.pma_counters) {
        const Prepared& m = pma(c.name);
        sink.counter(m.metric, m.help, base, static_cast<double>(c.value) * m.scale);
      }
    }
  }
  sink.gauge("rdma_exporter_sysfs_unavailable_values",
             "sysfs values skipped in the last collection because the kernel declined to give "
             "them (EINVAL, EOPNOTSUPP, \"N/A (no PMA)\").",
             {}, static_cast<double>(unavailable));
  return errors;
}

void add_sysfs_file_metrics(MetricSink& sink) {
  sink.gauge("rdma_exporter_sysfs_open_files",
             "sysfs attribute files the exporter keeps open between collections, re-read in "
             "place each time.",
             {}, static_cast<double>(sysfs::open_attribute_files()));
  sink.gauge("rdma_exporter_sysfs_uncached_files",
             "sysfs attribute files opened, read and closed on every collection because the "
             "budget of open files (from the open-file limit) was exhausted.",
             {}, static_cast<double>(sysfs::uncached_attribute_files()));
}

CollectorEntry sysfs_entry() {
  CollectorEntry e;
  e.name = "sysfs";
  e.help =
      "Hardware identity, port rate and link layer, InfiniBand PMA counters and device-level "
      "hw counters, from sysfs.";
  e.reads_rdma_netlink = false;
  e.make = [](const CollectorContext& c) { return std::make_unique<SysfsCollector>(c.sysfs_root); };
  return e;
}

}  // namespace rdma_exporter
