#pragma once

#include <any>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/scrape.hpp"
#include "common/duration.hpp"
#include "common/metric_sink.hpp"

namespace rdma_exporter {

// Kernel state a collector writes, opt-in (per-QP counter modes and
// bindings, optional counters). The collection calls reconcile() between
// collections every interval() while active(), and restore() once at exit.
class KernelStateManager {
 public:
  virtual ~KernelStateManager() = default;
  // True while there is something to write or to undo.
  virtual bool active() const = 0;
  virtual Duration interval() const = 0;
  // Brings the kernel to the configured state; failures are counted and
  // logged by the manager, never thrown.
  virtual void reconcile(Scrape& scrape) = 0;
  // Puts back what the configuration asks to restore on exit.
  virtual void restore(Scrape& /*scrape*/) {}
};

// One source of metrics. collect() adds samples to the sink and returns what
// went wrong; an empty list is success. A failing device or file is reported
// and skipped, never fatal to the rest. collect() does not throw.
class Collector {
 public:
  virtual ~Collector() = default;
  virtual std::string_view name() const = 0;
  virtual std::vector<std::string> collect(Scrape& scrape, MetricSink& sink) = 0;

  // Takes new options on a configuration reload, keeping the state that
  // must outlive it (series, write counts, bindings). False: the collection
  // makes a new collector instead.
  virtual bool reconfigure(const std::any& /*options*/) { return false; }

  // The kernel state this collector writes, if any.
  virtual KernelStateManager* manager() { return nullptr; }
};

}  // namespace rdma_exporter
