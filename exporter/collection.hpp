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
#include "collectors/registry.hpp"
#include "common/kernel/interfaces.hpp"
#include "common/kernel/nldev/client.hpp"
#include "exporter/config.hpp"
#include "exporter/snapshot.hpp"

namespace rdma_exporter {

// Runs every enabled collector of the registry, then the daemon's own
// collectors (the probe), and adds the exporter's own metrics. Not
// thread-safe: one collection at a time (the SnapshotCache sees to that).
class Collection {
 public:
  // The daemon's own telemetry (the HTTP server's counters, OTLP push,
  // reloads), written at the end of every collection from the collecting
  // thread. Unlike collectors these cannot fail and are not accounted.
  using MetricSource = std::function<void(MetricSink&)>;

  Collection(const Config& config, KernelInterfaces kernel);
  // `transport` for rdma netlink, the running kernel for the rest.
  Collection(const Config& config, std::unique_ptr<netlink::Transport> transport);
  // With the running kernel behind everything.
  explicit Collection(const Config& config);
  ~Collection();

  // A collector that is not in the registry (the probe): collected after the
  // registry's, with the same success and duration accounting; it stays
  // across reloads.
  void add_collector(std::unique_ptr<Collector> collector);
  void add_self_metrics(MetricSource source) { sources_.push_back(std::move(source)); }

  // Applies a new, valid configuration (reload) between collections.
  // Collectors that stay enabled keep the state that must outlive it
  // (per-QP series, managers' bindings and write counts); a collector turned
  // off first restores the kernel state it was asked to restore. Failure
  // counts are kept. `collection.netlink_timeout` takes effect at the next
  // start.
  void reconfigure(const Config& config);

  std::shared_ptr<const Snapshot> collect();

  // Kernel writes the configuration asks for (per-QP counter modes and
  // bindings, optional counters), by the collectors' managers. Both run on
  // the collecting thread, between collections, every
  // maintenance_interval() (zero when nothing is managed).
  bool manages_kernel_state() const;
  Duration maintenance_interval() const;
  void maintain();
  void restore_kernel_state();

  // The node's pods and containers, nullptr while the kubernetes section is
  // off.
  kubernetes::PodDirectory* pods() { return pods_.get(); }

 private:
  struct Running {
    const CollectorEntry* entry;  // nullptr for the daemon's own
    std::unique_ptr<Collector> collector;
  };

  void build_collectors();
  // Makes, remakes (new options) or drops the pod directory.
  void configure_pods();
  // A Scrape of this collection: the filter, netlink and the pods.
  Scrape scrape();
  std::vector<KernelStateManager*> managers() const;
  void retire(Running& running);
  void log_changes(const CollectorOutcome& outcome);
  // The steps of collect(): every collector in order, each timed and its
  // errors kept as its outcome; then the exporter's own metrics: rdma
  // netlink's presence, the node's Kubernetes APIs, each collector's health
  // (tagged with the collector).
  void run_collectors(Scrape& scrape, MetricSink& sink, Snapshot& snap);
  void add_netlink_metrics(Scrape& scrape, MetricSink& sink);
  void add_kubernetes_metrics(MetricSink& sink) const;
  void add_collector_health(const Snapshot& snap, MetricSink& sink);
  bool uses_netlink() const;

  Config config_;
  DeviceFilter filter_;
  KernelInterfaces kernel_;
  nldev::Client client_;
  std::vector<Running> running_;  // registry order, then the daemon's own
  std::vector<MetricSource> sources_;
  std::unique_ptr<kubernetes::PodDirectory> pods_;
  kubernetes::Options pods_options_;

  // Process-lifetime state for self metrics and change-only logging.
  uint64_t collections_ = 0;
  std::map<std::string, uint64_t> failures_;
  std::map<std::string, std::vector<std::string>> last_errors_;
  int last_netlink_present_ = -1;
};

}  // namespace rdma_exporter
