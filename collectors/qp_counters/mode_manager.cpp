#include "collectors/qp_counters/mode_manager.hpp"

#include <rdma/rdma_netlink.h>

#include <algorithm>
#include <set>

#include "collectors/port_rules.hpp"
#include "common/kernel/nldev/counter_codec.hpp"
#include "common/log.hpp"

namespace rdma_exporter {
namespace {

using Mode = QpCountersOptions::Mode;

uint32_t wanted_mask(const QpCountersOptions::PortRule& r) {
  uint32_t mask = 0;
  if (r.by_qp_type) mask |= RDMA_COUNTER_MASK_QP_TYPE;
  if (r.by_pid) mask |= RDMA_COUNTER_MASK_PID;
  return mask;
}

}  // namespace

CounterModeManager::CounterModeManager(const QpCountersOptions& options)
    : options_(options), processes_(options.proc_root) {
  compile();
}

void CounterModeManager::reconfigure(const QpCountersOptions& options) {
  options_ = options;
  processes_ = ProcessInfo(options.proc_root);
  compile();
}

void CounterModeManager::compile() {
  active_ = false;
  device_patterns_.clear();
  rules_.clear();
  for (const auto& p : options_.ports) {
    device_patterns_.push_back(Pattern::checked(p.device));
    if (p.mode != Mode::observe) active_ = true;
  }
  for (const auto& r : options_.manual_rules) {
    CompiledRule c;
    if (r.comm) c.comm = Pattern::checked(*r.comm);
    if (r.cgroup) c.cgroup = Pattern::checked(*r.cgroup);
    for (const auto& t : r.qp_types) {
      if (auto v = nldev::qp_type_from_name(t)) c.types.push_back(*v);
    }
    rules_.push_back(std::move(c));
  }
}

const QpCountersOptions::PortRule* CounterModeManager::rule_for(const std::string& device,
                                                                uint32_t port) const {
  return first_matching_rule(options_.ports, device_patterns_, device, port);
}

void CounterModeManager::record(const PortKey& key, const std::string& operation,
                                const Status& result) {
  const std::string res = result_name(result);
  ++writes_[{key.first, key.second, operation, res}];
  auto& last = last_result_[{key.first, key.second, operation}];
  if (last == res) return;
  last = res;
  if (result) {
    log::info("qp counters: operation succeeded",
              {{"device", key.first}, {"port", key.second}, {"operation", operation}});
  } else {
    log::warn(result.error().code == EPERM
                  ? "qp counters: operation failed (writing counter modes needs CAP_NET_ADMIN)"
                  : "qp counters: operation failed",
              {{"device", key.first},
               {"port", key.second},
               {"operation", operation},
               {"err", result.error().message}});
  }
}

void CounterModeManager::unbind_where(
    Scrape& scrape, const std::function<bool(const PortKey&, const Binding&)>& should) {
  for (auto it = bindings_.begin(); it != bindings_.end();) {
    const PortKey key{std::get<0>(it->first), std::get<1>(it->first)};
    auto st = ports_.find(key);
    if (st == ports_.end() || !should(key, it->second)) {
      ++it;
      continue;
    }
    record(key, "unbind",
           scrape.netlink().unbind_qp(st->second.dev_index, key.second, it->second.counter_id,
                                      std::get<2>(it->first)));
    it = bindings_.erase(it);
  }
}

void CounterModeManager::drop_orphans(Scrape& scrape) {
  std::set<std::string> rule_names;
  for (const auto& r : options_.manual_rules) rule_names.insert(r.name);
  unbind_where(scrape, [&](const PortKey& key, const Binding& b) {
    const auto* rule = rule_for(key.first, key.second);
    return rule == nullptr || rule->mode != Mode::manual || rule_names.count(b.rule) == 0U;
  });
}

void CounterModeManager::reconcile(Scrape& scrape) {
  if (!bindings_.empty()) drop_orphans(scrape);
  if (!active_) return;
  const auto& topology = scrape.topology();
  if (!topology) return;
  processes_.next_collection(ProcessInfo::Clock::now());
  std::set<PortKey> present;
  for (const auto& entry : topology->devices) {
    if (!entry.ports) continue;
    // Read once per device, when a manual port needs them: the QPs, and which
    // QPs are bound to a counter set already (per port).
    std::optional<std::vector<nldev::Qp>> qps;
    std::map<uint32_t, std::set<uint32_t>> bound;
    for (const auto& port : *entry.ports) {
      const auto* rule = rule_for(entry.device.name, port.index);
      if (rule == nullptr || rule->mode == Mode::observe) continue;
      const PortKey key{entry.device.name, port.index};
      present.insert(key);
      auto mode = scrape.netlink().counter_mode(entry.device.index, port.index);
      if (!mode) {
        record(key, "read_mode", mode.error());
        continue;
      }
      PortState& st = ports_[key];
      if (st.dev_index != entry.device.index) {
        // A new device, or the same name after a driver reload: start afresh.
        st = PortState{};
        st.dev_index = entry.device.index;
        for (auto it = bindings_.begin(); it != bindings_.end();) {
          it = std::get<0>(it->first) == key.first && std::get<1>(it->first) == key.second
                   ? bindings_.erase(it)
                   : std::next(it);
        }
      }
      st.mode = rule->mode;
      st.restore_on_exit = rule->restore_on_exit;
      if (!st.initial) st.initial = *mode;
      if (rule->mode == Mode::auto_mode) {
        reconcile_auto(scrape.netlink(), key, st, *rule, *mode);
      } else {
        if (!qps) {
          auto r = scrape.netlink().qps(entry.device.index);
          if (!r) {
            record(key, "read_qps", r.error());
            continue;
          }
          auto sets = scrape.netlink().counter_sets(entry.device.index);
          if (!sets) {
            record(key, "read_sets", sets.error());
            continue;
          }
          qps = std::move(r).value();
          for (const auto& set : *sets) bound[set.port].insert(set.lqpns.begin(), set.lqpns.end());
        }
        reconcile_manual(scrape.netlink(), key, st, *rule, *mode, *qps, bound[port.index]);
      }
    }
  }
  // Ports that went away: forget them, so a reappearing device is set again.
  for (auto it = ports_.begin(); it != ports_.end();) {
    it = present.count(it->first) != 0U ? std::next(it) : ports_.erase(it);
  }
}

void CounterModeManager::reconcile_auto(nldev::Client& nl, const PortKey& key, PortState& st,
                                        const QpCountersOptions::PortRule& rule,
                                        const nldev::CounterMode& mode) {
  const uint32_t mask = wanted_mask(rule);
  if (mode.mode == RDMA_COUNTER_MODE_AUTO && mode.auto_mask == mask) {
    st.drift = false;
    return;
  }
  const bool ours_to_change =
      mode.mode == RDMA_COUNTER_MODE_NONE || st.changed_by_us || rule.take_over;
  if (!ours_to_change) {
    st.drift = true;
    if (!drift_logged_[key]) {
      drift_logged_[key] = true;
      log::warn(
          "qp counters: port mode set by someone else; leaving it (set take_over to change "
          "it)",
          {{"device", key.first},
           {"port", key.second},
           {"mode", nldev::counter_mode_name(mode.mode)}});
    }
    return;
  }
  drift_logged_[key] = false;
  Status s = nl.set_auto_mode(st.dev_index, key.second, mask);
  record(key, "set_auto", s);
  st.drift = !s;
  if (s) st.changed_by_us = true;
}

std::optional<std::size_t> CounterModeManager::matching_rule(const nldev::Qp& qp) {
  if (!qp.pid) return std::nullopt;  // kernel QPs are not ours to bind
  for (std::size_t i = 0; i < options_.manual_rules.size(); ++i) {
    const auto& r = options_.manual_rules[i];
    const auto& c = rules_[i];
    if (r.pid && *r.pid != *qp.pid) continue;
    if (!c.types.empty() && std::find(c.types.begin(), c.types.end(), qp.type) == c.types.end()) {
      continue;
    }
    if (c.comm) {
      auto comm = processes_.comm(*qp.pid);
      if (!comm || !c.comm->matches(*comm)) continue;
    }
    if (c.cgroup) {
      auto cg = processes_.cgroup(*qp.pid);
      if (!cg || !c.cgroup->matches(*cg)) continue;
    }
    return i;
  }
  return std::nullopt;
}

void CounterModeManager::reconcile_manual(nldev::Client& nl, const PortKey& key, PortState& st,
                                          const QpCountersOptions::PortRule& rule,
                                          const nldev::CounterMode& mode,
                                          const std::vector<nldev::Qp>& qps,
                                          const std::set<uint32_t>& bound_elsewhere) {
  if (mode.mode == RDMA_COUNTER_MODE_AUTO) {
    if (!rule.take_over && !st.changed_by_us) {
      st.drift = true;
      if (!drift_logged_[key]) {
        drift_logged_[key] = true;
        log::warn(
            "qp counters: port in auto mode set by someone else; manual rules need it off "
            "(set take_over)",
            {{"device", key.first}, {"port", key.second}, {"mode", "auto"}});
      }
      return;
    }
    Status off = nl.set_auto_mode(st.dev_index, key.second, 0);
    record(key, "set_auto_off", off);
    if (!off) {
      st.drift = true;
      return;
    }
    st.changed_by_us = true;
  }
  st.drift = false;
  drift_logged_[key] = false;

  std::set<uint32_t> alive;
  for (const auto& qp : qps) {
    if (!qp.port || *qp.port != key.second) continue;
    alive.insert(qp.lqpn);
    const auto rule_index = matching_rule(qp);
    const auto bkey = std::make_tuple(key.first, key.second, qp.lqpn);
    auto bound = bindings_.find(bkey);
    if (bound != bindings_.end()) {
      if (rule_index && options_.manual_rules[*rule_index].name == bound->second.rule &&
          bound->second.pid == *qp.pid) {
        continue;
      }
      // It no longer matches (or matches another rule): undo our binding.
      Status s = nl.unbind_qp(st.dev_index, key.second, bound->second.counter_id, qp.lqpn);
      record(key, "unbind", s);
      bindings_.erase(bound);
      if (!s) continue;
    }
    if (!rule_index) continue;
    // A QP already in a counter set (left by auto mode, or bound by an
    // operator) stays there: binding it again would fail, and some kernels
    // leak the port's set count on that failure.
    if (bound_elsewhere.count(qp.lqpn) != 0U) continue;
    const std::string& rule_name = options_.manual_rules[*rule_index].name;
    const auto gkey = std::make_tuple(key.first, key.second, rule_name, *qp.pid);
    std::optional<uint32_t> group;
    if (auto g = groups_.find(gkey); g != groups_.end()) group = g->second;
    auto r = nl.bind_qp(st.dev_index, key.second, qp.lqpn, group);
    if (!r && group && r.error().code == ENOENT) {
      // The group's set is gone (its QPs all ended): start a new one.
      groups_.erase(gkey);
      r = nl.bind_qp(st.dev_index, key.second, qp.lqpn, std::nullopt);
    }
    record(key, "bind", r ? ok_status() : Status(r.error()));
    if (!r) continue;
    groups_[gkey] = r->counter_id;
    bindings_[bkey] = Binding{r->counter_id, rule_name, *qp.pid};
    st.changed_by_us = true;
  }
  // Destroyed QPs were unbound by the kernel.
  for (auto it = bindings_.begin(); it != bindings_.end();) {
    const bool here = std::get<0>(it->first) == key.first && std::get<1>(it->first) == key.second;
    it = here && alive.count(std::get<2>(it->first)) == 0U ? bindings_.erase(it) : std::next(it);
  }
}

void CounterModeManager::restore(Scrape& scrape) {
  unbind_where(scrape,
               [&](const PortKey& key, const Binding&) { return ports_.at(key).restore_on_exit; });
  for (auto& [key, st] : ports_) {
    if (!st.restore_on_exit || !st.changed_by_us || !st.initial) continue;
    const uint32_t mask = st.initial->mode == RDMA_COUNTER_MODE_AUTO ? st.initial->auto_mask : 0;
    if (st.initial->mode == RDMA_COUNTER_MODE_MANUAL) continue;  // bindings are undone above
    record(key, "restore", scrape.netlink().set_auto_mode(st.dev_index, key.second, mask));
  }
}

void CounterModeManager::add_metrics(MetricSink& sink) const {
  for (const auto& [key, st] : ports_) {
    const Labels labels{{"device", key.first}, {"port", std::to_string(key.second)}};
    sink.gauge("rdma_qp_stat_mode_drift",
               "1 when a port the exporter manages is not in its configured counter mode "
               "(set otherwise by someone else, or the write failed).",
               labels, st.drift ? 1.0 : 0.0);
  }
  for (const auto& [key, count] : writes_) {
    sink.counter("rdma_qp_stat_writes_total",
                 "Kernel writes made to manage per-QP counters, by operation and result (ok or "
                 "the errno's name).",
                 {{"device", std::get<0>(key)},
                  {"port", std::to_string(std::get<1>(key))},
                  {"operation", std::get<2>(key)},
                  {"result", std::get<3>(key)}},
                 static_cast<double>(count));
  }
}

}  // namespace rdma_exporter
