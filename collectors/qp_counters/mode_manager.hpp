#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "collectors/collector.hpp"
#include "collectors/qp_counters/options.hpp"
#include "collectors/qp_counters/process_info.hpp"
#include "collectors/scrape.hpp"
#include "common/kernel/nldev/model.hpp"
#include "common/metric_sink.hpp"
#include "common/pattern.hpp"

namespace rdma_exporter {

// Writes the per-QP counter state the configuration asks for; opt-in, and
// every write needs CAP_NET_ADMIN.
// - auto ports: auto mode with the configured criteria, applied again when a
//   device appears or a driver reload resets it. A port whose mode someone
//   else set is left alone (and reported as drift) unless take_over is set.
// - manual ports: every process whose QPs match a manual rule gets a counter
//   set of its own per port; new QPs are bound as they appear (at each
//   reconcile); bindings whose QP no longer matches are undone.
// Each write's outcome is counted by result, and logged once per change.
class CounterModeManager final : public KernelStateManager {
 public:
  explicit CounterModeManager(const QpCountersOptions& options);

  // A new configuration (reload): the state of ports, bindings and write
  // counts is kept. Bindings whose rule is gone, or whose port is no longer
  // manual, are undone at the next reconcile.
  void reconfigure(const QpCountersOptions& options);

  // True when some port rule asks for auto or manual (then the exporter
  // writes), or while bindings made before a reload remain to be undone.
  bool active() const override { return active_ || !bindings_.empty(); }
  Duration interval() const override { return options_.reconcile_interval; }

  // Brings the managed ports to their configured state. Runs on the
  // collecting thread, between collections.
  void reconcile(Scrape& scrape) override;
  // On exit, for ports with restore_on_exit: undoes this process's manual
  // bindings and puts back the mode found at start.
  void restore(Scrape& scrape) override;

  void add_metrics(MetricSink& sink) const;

 private:
  using PortKey = std::pair<std::string, uint32_t>;
  struct PortState {
    uint32_t dev_index = 0;
    std::optional<nldev::CounterMode> initial;  // found before our first write
    bool changed_by_us = false;
    bool drift = false;
    QpCountersOptions::Mode mode = QpCountersOptions::Mode::observe;
    bool restore_on_exit = false;
  };
  struct Binding {
    uint32_t counter_id = 0;
    std::string rule;  // the manual rule's name
    uint32_t pid = 0;
  };

  const QpCountersOptions::PortRule* rule_for(const std::string& device, uint32_t port) const;
  void reconcile_auto(nldev::Client& nl, const PortKey& key, PortState& st,
                      const QpCountersOptions::PortRule& rule, const nldev::CounterMode& mode);
  void reconcile_manual(nldev::Client& nl, const PortKey& key, PortState& st,
                        const QpCountersOptions::PortRule& rule, const nldev::CounterMode& mode,
                        const std::vector<nldev::Qp>& qps, const std::set<uint32_t>& bound);
  std::optional<std::size_t> matching_rule(const nldev::Qp& qp);
  void record(const PortKey& key, const std::string& operation, const Status& result);
  void compile();
  // Undoes bindings on ports that are no longer managed in manual mode.
  void drop_orphans(Scrape& scrape);
  // Undoes this process's bindings for which `should` says so.
  void unbind_where(Scrape& scrape,
                    const std::function<bool(const PortKey&, const Binding&)>& should);

  QpCountersOptions options_;
  bool active_ = false;
  std::vector<Pattern> device_patterns_;
  struct CompiledRule {
    std::optional<Pattern> comm;
    std::optional<Pattern> cgroup;
    std::vector<uint8_t> types;
  };
  std::vector<CompiledRule> rules_;
  ProcessInfo processes_;

  std::map<PortKey, PortState> ports_;
  // Our manual bindings: (device, port, lqpn) -> binding; and the counter
  // set of each (device, port, rule, pid) group.
  std::map<std::tuple<std::string, uint32_t, uint32_t>, Binding> bindings_;
  std::map<std::tuple<std::string, uint32_t, std::string, uint32_t>, uint32_t> groups_;
  std::map<std::tuple<std::string, uint32_t, std::string, std::string>, uint64_t> writes_;
  std::map<std::tuple<std::string, uint32_t, std::string>, std::string> last_result_;
  std::map<PortKey, bool> drift_logged_;
};

}  // namespace rdma_exporter
