#include "collectors/hw_counters/hw_counters_collector.hpp"

#include "collectors/registry.hpp"

namespace rdma_exporter {

std::string port_hw_counter_metric(std::string_view kernel_name) {
  return "rdma_port_hw_" + sanitize_metric_fragment(kernel_name) + "_total";
}

std::vector<std::string> HwCountersCollector::collect(Scrape& scrape, MetricSink& sink) {
  std::vector<std::string> errors;
  const Topology* topology = scrape.topology_for(errors);
  if (topology == nullptr) return errors;
  for_each_port(*topology, [&](const PortRef& p) {
    auto counters = scrape.netlink().port_counters(p.device.index, p.port.index);
    if (!counters) {
      // A driver without port hw counters (siw, for one) makes the kernel
      // answer EINVAL (older kernels: EOPNOTSUPP): nothing to export.
      const int code = counters.error().code;
      if (code != EINVAL && code != EOPNOTSUPP) {
        errors.push_back(p.name() + ": " + counters.error().message);
      }
      return;
    }
    const Labels labels = p.labels();
    for (const auto& c : counters->counters) {
      sink.counter(port_hw_counter_metric(c.name),
                   "Port hw counter \"" + c.name + "\" of the driver, from rdma netlink.", labels,
                   static_cast<double>(c.value));
    }
  });
  return errors;
}

CollectorEntry hw_counters_entry() {
  CollectorEntry e;
  e.name = "hw_counters";
  e.help = "Every hw counter of each port's default counter, from rdma netlink.";
  e.make = [](const CollectorContext&) { return std::make_unique<HwCountersCollector>(); };
  return e;
}

}  // namespace rdma_exporter
