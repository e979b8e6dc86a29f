#include "collectors/optional_counters/optional_counters_collector.hpp"

#include "collectors/registry.hpp"

namespace rdma_exporter {

std::vector<std::string> OptionalCountersCollector::collect(Scrape& scrape, MetricSink& sink) {
  std::vector<std::string> errors;
  const Topology* topology = scrape.topology_for(errors);
  if (topology != nullptr) {
    for_each_port(*topology, [&](const PortRef& p) {
      auto status = scrape.netlink().counter_status(p.device.index, p.port.index);
      if (!status) {
        // Kernels before 5.16 do not know the command (EINVAL), and a
        // driver without port counters answers EINVAL too: nothing to say.
        const int code = status.error().code;
        if (code != EINVAL && code != EOPNOTSUPP) {
          errors.push_back(p.name() + ": " + status.error().message);
        }
        return;
      }
      for (const auto& c : status->counters) {
        if (!c.enabled) continue;  // not an optional counter
        Labels labels = p.labels();
        labels.emplace_back("counter", c.name);
        sink.gauge("rdma_port_optional_stat_enabled",
                   "1 when the port's optional hw counter is enabled (its value is then "
                   "rdma_port_hw_<counter>_total), 0 when it is offered but disabled.",
                   std::move(labels), *c.enabled ? 1.0 : 0.0);
      }
    });
  }
  manager_.add_metrics(sink);
  return errors;
}

CollectorEntry optional_counters_entry() {
  CollectorEntry e;
  e.name = "optional_counters";
  e.help =
      "Which optional port counters are enabled, and (opt-in) keeping a configured set "
      "enabled, through rdma netlink.";
  set_options<OptionalCountersOptions>(e, parse_optional_counters_options,
                                       validate_optional_counters_options);
  e.privilege_problems = [](const std::any& options, const Privileges& have) {
    std::vector<std::string> out;
    if (std::any_cast<const OptionalCountersOptions&>(options).writes() && !have.cap_net_admin) {
      out.emplace_back(
          "optional_counters.ports asks to enable optional counters, but this process lacks "
          "CAP_NET_ADMIN: those kernel writes will fail with EPERM (reading still works)");
    }
    return out;
  };
  e.make = [](const CollectorContext& c) {
    return std::make_unique<OptionalCountersCollector>(
        std::any_cast<const OptionalCountersOptions&>(c.options));
  };
  return e;
}

}  // namespace rdma_exporter
