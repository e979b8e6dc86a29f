#include "collectors/optional_counters/manager.hpp"

#include <algorithm>

#include "collectors/port_rules.hpp"
#include "common/log.hpp"

namespace rdma_exporter {

OptionalCounterPlan plan_optional_counters(const std::vector<nldev::HwCounterStatus>& status,
                                           const std::vector<std::string>& wanted, bool own) {
  OptionalCounterPlan plan;
  std::set<uint32_t> enabled;
  std::set<uint32_t> next;
  for (const auto& c : status) {
    if (c.enabled && *c.enabled) {
      enabled.insert(c.index);
      if (!own) next.insert(c.index);
    }
  }
  for (const auto& name : wanted) {
    auto it = std::find_if(status.begin(), status.end(), [&](const nldev::HwCounterStatus& c) {
      return c.name == name && c.enabled.has_value();
    });
    if (it == status.end()) {
      if (std::find(plan.missing.begin(), plan.missing.end(), name) == plan.missing.end()) {
        plan.missing.push_back(name);
      }
      continue;
    }
    next.insert(it->index);
  }
  plan.indices.assign(next.begin(), next.end());
  plan.write = next != enabled;
  return plan;
}

std::string optional_counter_names(const std::vector<nldev::HwCounterStatus>& status,
                                   const std::vector<uint32_t>& indices) {
  std::string out;
  for (uint32_t index : indices) {
    auto it = std::find_if(status.begin(), status.end(),
                           [&](const nldev::HwCounterStatus& c) { return c.index == index; });
    out += (out.empty() ? "" : ",") + (it == status.end() ? std::to_string(index) : it->name);
  }
  return out.empty() ? "none" : out;
}

OptionalCounterManager::OptionalCounterManager(const OptionalCountersOptions& options) {
  reconfigure(options);
}

void OptionalCounterManager::reconfigure(const OptionalCountersOptions& options) {
  options_ = options;
  device_patterns_.clear();
  active_ = false;
  for (const auto& r : options_.ports) {
    device_patterns_.push_back(Pattern::checked(r.device));
    if (r.writes()) active_ = true;
  }
}

const OptionalCountersOptions::PortRule* OptionalCounterManager::rule_for(const std::string& device,
                                                                          uint32_t port) const {
  return first_matching_rule(options_.ports, device_patterns_, device, port);
}

void OptionalCounterManager::note(const PortKey& key, const std::string& topic,
                                  const std::string& text) {
  auto& last = last_note_[{key, topic}];
  if (last == text) return;
  last = text;
  if (!text.empty()) log::warn(text, {{"device", key.first}, {"port", key.second}});
}

void OptionalCounterManager::reconcile(Scrape& scrape) {
  if (!active_) return;
  const auto& topology = scrape.topology();
  if (!topology) return;
  for_each_port(*topology, [&](const PortRef& p) {
    const auto* rule = rule_for(p.device.name, p.port.index);
    if (rule == nullptr || !rule->writes()) return;
    const PortKey key{p.device.name, p.port.index};
    const std::string where = "optional counters on " + p.name();
    auto status = scrape.netlink().counter_status(p.device.index, p.port.index);
    if (!status) {
      note(key, "read", where + ": cannot read which are enabled: " + status.error().message);
      return;
    }
    note(key, "read", "");
    const auto plan = plan_optional_counters(status->counters, rule->enable, rule->own);
    std::string missing;
    for (const auto& m : plan.missing) missing += (missing.empty() ? "" : ", ") + m;
    note(key, "missing",
         missing.empty() ? "" : where + ": the driver offers no optional counter " + missing);
    if (!plan.write) return;
    const Status s =
        scrape.netlink().set_optional_counters(p.device.index, p.port.index, plan.indices);
    const std::string result = result_name(s);
    ++writes_[{key.first, key.second, result}];
    if (s) {
      std::vector<uint32_t> before;
      for (const auto& c : status->counters) {
        if (c.enabled && *c.enabled) before.push_back(c.index);
      }
      log::info("optional counters: enabled set changed",
                {{"device", key.first},
                 {"port", key.second},
                 {"enabled", optional_counter_names(status->counters, plan.indices)},
                 {"was", optional_counter_names(status->counters, before)}});
      note(key, "write", "");
    } else {
      note(key, "write",
           where + ": enabling " + optional_counter_names(status->counters, plan.indices) +
               " failed: " + s.error().message +
               (s.error().code == EPERM ? " (writing optional counters needs CAP_NET_ADMIN)" : ""));
    }
  });
}

void OptionalCounterManager::add_metrics(MetricSink& sink) const {
  for (const auto& [key, count] : writes_) {
    sink.counter("rdma_port_optional_stat_writes_total",
                 "Writes of the enabled optional counter set of a port, by result (ok or the "
                 "errno's name).",
                 {{"device", std::get<0>(key)},
                  {"port", std::to_string(std::get<1>(key))},
                  {"result", std::get<2>(key)}},
                 static_cast<double>(count));
  }
}

}  // namespace rdma_exporter
