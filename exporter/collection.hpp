#pragma once

#include <prometheus/metric_family.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectors/collector.hpp"
#include "collectors/device_filter.hpp"
#include "collectors/kernel/ethtool/ioctl.hpp"
#include "collectors/kernel/netlink/transport.hpp"
#include "collectors/kernel/nldev/client.hpp"
#include "collectors/optional_counters/manager.hpp"
#include "collectors/optional_counters/optional_counters_collector.hpp"
#include "collectors/qp_counters/mode_manager.hpp"
#include "collectors/qp_counters/qp_counters_collector.hpp"
#include "exporter/config.hpp"
#include "exporter/snapshot.hpp"

namespace rdma_exporter {

// The kernel interfaces the collectors read through. Tests put fakes here.
struct KernelInterfaces {
  std::unique_ptr<netlink::Transport> rdma;   // NETLINK_RDMA
  std::unique_ptr<netlink::Transport> route;  // NETLINK_ROUTE (DCB)
  std::unique_ptr<ethtool::Ioctl> ethtool;    // SIOCETHTOOL

  // The running kernel's.
  static KernelInterfaces real(const Config& config);
};

// Runs every enabled collector and adds the exporter's own metrics. Not
// thread-safe: one collection at a time (the SnapshotCache sees to that).
class Collection {
 public:
  // Self-metric sources (the HTTP server's counters, ...) called at the end
  // of every collection, from the collecting thread.
  using MetricSource = std::function<void(MetricSink&)>;

  Collection(const Config& config, KernelInterfaces kernel);
  // `transport` for rdma netlink, the running kernel for the rest.
  Collection(const Config& config, std::unique_ptr<netlink::Transport> transport);
  // With the running kernel behind everything.
  explicit Collection(const Config& config);

  void add_self_metrics(MetricSource source) { sources_.push_back(std::move(source)); }

  // Applies a new, valid configuration (reload) between collections. State
  // that must outlive it is kept: collector failure counts, per-QP series and
  // the counter mode manager's bindings. `collection.netlink_timeout` takes
  // effect at the next start.
  void reconfigure(const Config& config);

  std::shared_ptr<const Snapshot> collect();

  // Kernel writes the configuration asks for (per-QP counter modes and
  // bindings, optional counters). Both run on the collecting thread, between
  // collections, every maintenance_interval() (zero when nothing is managed).
  bool manages_kernel_state() const;
  Duration maintenance_interval() const;
  void maintain();
  void restore_kernel_state();

  // Names of the collectors in use, in collection order.
  std::vector<std::string> collector_names() const;

 private:
  void log_changes(const CollectorOutcome& outcome);

  Config config_;
  DeviceFilter filter_;
  KernelInterfaces kernel_;
  nldev::Client client_;
  void build_collectors();

  std::unique_ptr<CounterModeManager> manager_;
  std::unique_ptr<QpCountersCollector> qp_counters_;  // kept across reloads
  std::unique_ptr<OptionalCounterManager> optional_manager_;
  std::vector<std::unique_ptr<Collector>> collectors_;  // rebuilt on reload
  // Every enabled collector in collection order: devices, hw_counters,
  // optional_counters, resources, qp_counters, ethtool, dcb, sysfs.
  std::vector<Collector*> order_;
  std::vector<MetricSource> sources_;

  // Process-lifetime state for self metrics and change-only logging.
  uint64_t collections_ = 0;
  std::map<std::string, uint64_t> failures_;
  std::map<std::string, std::vector<std::string>> last_errors_;
  int last_netlink_present_ = -1;
};

}  // namespace rdma_exporter
