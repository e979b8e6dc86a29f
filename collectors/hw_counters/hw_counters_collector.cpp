#include "collectors/hw_counters/hw_counters_collector.hpp"

#include <string>

#include "collectors/registry.hpp"

namespace rdma_exporter {
namespace {

using Source = HwCountersOptions::Source;
using MetricNames = HwCountersCollector::MetricNames;

const std::pair<std::string, std::string>& names_of(MetricNames& names,
                                                    const std::string& kernel_name) {
  auto it = names.find(kernel_name);
  if (it != names.end()) return it->second;
  return names
      .emplace(kernel_name,
               std::make_pair(port_hw_counter_metric(kernel_name),
                              "Port hw counter \"" + kernel_name + "\" of the driver."))
      .first->second;
}

// One port's counters, from either source, and where they came from.
template <typename Counters>
void export_port(MetricSink& sink, MetricNames& names, const std::string& device, uint32_t port,
                 const Counters& counters, const char* source) {
  const Labels labels{{"device", device}, {"port", std::to_string(port)}};
  for (const auto& c : counters) {
    const auto& [metric, help] = names_of(names, c.name);
    sink.counter(metric, help, labels, static_cast<double>(c.value));
  }
  Labels info = labels;
  info.emplace_back("source", source);
  sink.info("rdma_port_hw_source_info",
            "Where the port's hw counters (rdma_port_hw_*_total) were read: source \"netlink\" "
            "(RDMA_NLDEV_CMD_STAT_GET) or \"sysfs\" (ports/<n>/hw_counters/, when netlink cannot "
            "give them); the value is always 1.",
            std::move(info));
}

// Reads one port's hw_counters/ directory. False when the port has none.
bool export_from_sysfs(const sysfs::Reader& reader, MetricNames& names, const std::string& device,
                       uint32_t port, MetricSink& sink, std::vector<std::string>& errors) {
  sysfs::ReadNotes notes;
  const auto counters = reader.port_hw_counters(device, port, notes);
  errors.insert(errors.end(), notes.problems.begin(), notes.problems.end());
  if (!counters) return false;
  export_port(sink, names, device, port, *counters, "sysfs");
  return true;
}

// Every port of every device sysfs lists and the filter allows; returns the
// number of ports that had hw counters.
std::size_t export_all_from_sysfs(const sysfs::Reader& reader, MetricNames& metric_names,
                                  const DeviceFilter& filter, MetricSink& sink,
                                  std::vector<std::string>& errors) {
  auto names = reader.device_names();
  if (!names) {
    errors.push_back(names.error().message);
    return 0;
  }
  std::size_t ports = 0;
  for (const std::string& device : *names) {
    if (!filter.allows(device)) continue;
    sysfs::ReadNotes notes;
    for (uint32_t port : reader.port_numbers(device, notes)) {
      if (export_from_sysfs(reader, metric_names, device, port, sink, errors)) ++ports;
    }
    errors.insert(errors.end(), notes.problems.begin(), notes.problems.end());
  }
  return ports;
}

}  // namespace

std::string port_hw_counter_metric(std::string_view kernel_name) {
  return "rdma_port_hw_" + sanitize_metric_fragment(kernel_name) + "_total";
}

std::vector<std::string> HwCountersCollector::collect(Scrape& scrape, MetricSink& sink) {
  std::vector<std::string> errors;
  if (options_.source == Source::sysfs) {
    export_all_from_sysfs(reader_, names_, scrape.filter(), sink, errors);
    return errors;
  }
  const bool fallback = options_.source == Source::automatic;

  const Result<Topology>& topology = scrape.topology();
  if (!topology) {
    // Without the device list from netlink, sysfs lists the ports. A kernel
    // without rdma netlink is no failure; another listing error is one
    // only when sysfs has no port counters either.
    const Error& e = topology.error();
    if (fallback && export_all_from_sysfs(reader_, names_, scrape.filter(), sink, errors) > 0) {
      return errors;
    }
    if (!is_protocol_absent(e)) errors.push_back("list devices: " + e.message);
    return errors;
  }

  for (const TopologyDevice& entry : topology->devices) {
    const nldev::Device& device = entry.device;
    if (!entry.ports) {
      // The devices collector reports the failed port list; sysfs lists
      // the ports instead.
      if (!fallback) continue;
      sysfs::ReadNotes notes;
      for (uint32_t port : reader_.port_numbers(device.name, notes)) {
        export_from_sysfs(reader_, names_, device.name, port, sink, errors);
      }
      errors.insert(errors.end(), notes.problems.begin(), notes.problems.end());
      continue;
    }
    for (const nldev::Port& port : *entry.ports) {
      auto counters = scrape.netlink().port_counters(device.index, port.index);
      if (counters) {
        export_port(sink, names_, device.name, port.index, counters->counters, "netlink");
        continue;
      }
      if (fallback && export_from_sysfs(reader_, names_, device.name, port.index, sink, errors)) {
        continue;
      }
      // A driver without port hw counters (siw, for one) makes the kernel
      // answer EINVAL (older kernels: EOPNOTSUPP): nothing to export. The
      // kernel answers EINVAL too when the driver fails to read them.
      const int code = counters.error().code;
      if (code != EINVAL && code != EOPNOTSUPP) {
        errors.push_back(PortRef{device, port}.name() + ": " + counters.error().message);
      }
    }
  }
  return errors;
}

CollectorEntry hw_counters_entry() {
  CollectorEntry e;
  e.name = "hw_counters";
  e.help =
      "Every hw counter of each port's default counter, from rdma netlink, or from sysfs where "
      "netlink cannot give them.";
  set_options<HwCountersOptions>(e, parse_hw_counters_options);
  e.make = [](const CollectorContext& c) {
    return std::make_unique<HwCountersCollector>(
        c.sysfs_root, std::any_cast<const HwCountersOptions&>(c.options));
  };
  return e;
}

}  // namespace rdma_exporter
