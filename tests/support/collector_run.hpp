#pragma once

// Runs one registered collector against fake kernel interfaces, without the
// daemon's Collection around it: the collector its registry entry makes,
// one Scrape and one collect() per call. The result has the shape of a
// collection (families and the collector's outcome) so that the
// tests/support/snapshot_query.hpp helpers read it.

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "collectors/device_filter.hpp"
#include "collectors/registry.hpp"
#include "common/kernel/interfaces.hpp"
#include "common/kernel/nldev/client.hpp"
#include "exporter/formats/text.hpp"
#include "exporter/snapshot.hpp"

namespace rdma_exporter::testing {

class CollectorRun {
 public:
  // `settings` gives the collector's options (its enabled flag is ignored).
  // `one_collection`: as with --once (background readers read in collect()).
  CollectorRun(std::string_view name, KernelInterfaces kernel,
               const CollectorSettings& settings = CollectorSettings(),
               std::string sysfs_root = "/nonexistent", bool one_collection = false)
      : entry_(*find_collector(name)),
        kernel_(std::move(kernel)),
        client_(*kernel_.rdma),
        sysfs_root_(std::move(sysfs_root)),
        one_collection_(one_collection) {
    collector_ = entry_.make(
        CollectorContext{kernel_, sysfs_root_, settings.options_of(entry_.name), one_collection_});
  }

  std::shared_ptr<const Snapshot> collect() {
    auto snap = std::make_shared<Snapshot>();
    MetricSink sink;
    Scrape scrape(client_, filter_);
    CollectorOutcome outcome{.name = entry_.name};
    outcome.errors = collector_->collect(scrape, sink);
    snap->outcomes.push_back(std::move(outcome));
    snap->families = sink.take();
    snap->text = render_text(snap->families);
    snap->taken = std::chrono::steady_clock::now();
    return snap;
  }

  // A configuration reload: the collector takes the new options, or is made
  // anew when it cannot.
  void reconfigure(const CollectorSettings& settings) {
    const std::any& options = settings.options_of(entry_.name);
    if (!collector_->reconfigure(options)) {
      collector_ = entry_.make(CollectorContext{kernel_, sysfs_root_, options, one_collection_});
    }
  }

  // The reconcile a daemon runs between collections, for a collector that
  // manages kernel state.
  void maintain() {
    if (KernelStateManager* m = collector_->manager(); m != nullptr && m->active()) {
      Scrape scrape(client_, filter_);
      m->reconcile(scrape);
    }
  }

  Collector& collector() { return *collector_; }

 private:
  const CollectorEntry& entry_;
  KernelInterfaces kernel_;
  nldev::Client client_;
  std::string sysfs_root_;
  bool one_collection_;
  DeviceFilter filter_;
  std::unique_ptr<Collector> collector_;
};

}  // namespace rdma_exporter::testing
