#pragma once

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "collectors/collector.hpp"
#include "collectors/optional_counters/options.hpp"
#include "collectors/scrape.hpp"
#include "common/kernel/nldev/model.hpp"
#include "common/metric_sink.hpp"
#include "common/pattern.hpp"

namespace rdma_exporter {

// What to write to a port so that the configured optional counters are
// enabled: the kernel replaces the whole enabled set on each write, so the
// set written is what is enabled now (unless the rule owns the set) plus
// what is configured.
struct OptionalCounterPlan {
  std::vector<uint32_t> indices;     // the whole set to keep enabled, ascending
  bool write = false;                // it differs from what is enabled now
  std::vector<std::string> missing;  // configured names the port has no optional counter for
};

OptionalCounterPlan plan_optional_counters(const std::vector<nldev::HwCounterStatus>& status,
                                           const std::vector<std::string>& wanted, bool own);

// Names of the optional counters in `indices`, comma-separated, for logs.
std::string optional_counter_names(const std::vector<nldev::HwCounterStatus>& status,
                                   const std::vector<uint32_t>& indices);

// Keeps the configured optional counters enabled on the ports the rules
// select. Opt-in; every write needs CAP_NET_ADMIN. The enabled set is lost
// when the driver reloads or the device is re-created: each reconcile reads
// the set again and writes when it is not what the rules ask for.
class OptionalCounterManager final : public KernelStateManager {
 public:
  explicit OptionalCounterManager(const OptionalCountersOptions& options);
  void reconfigure(const OptionalCountersOptions& options);

  // True when some rule asks for writes.
  bool active() const override { return active_; }
  Duration interval() const override { return options_.reconcile_interval; }

  // Runs on the collecting thread, between collections.
  void reconcile(Scrape& scrape) override;

  void add_metrics(MetricSink& sink) const;

 private:
  using PortKey = std::pair<std::string, uint32_t>;
  const OptionalCountersOptions::PortRule* rule_for(const std::string& device, uint32_t port) const;
  // Logs `text` at warn level when it differs from the last text for `key`
  // and `topic` (one line per change, not per reconcile).
  void note(const PortKey& key, const std::string& topic, const std::string& text);

  OptionalCountersOptions options_;
  std::vector<Pattern> device_patterns_;
  bool active_ = false;
  std::map<std::tuple<std::string, uint32_t, std::string>, uint64_t> writes_;
  std::map<std::pair<PortKey, std::string>, std::string> last_note_;
};

}  // namespace rdma_exporter
