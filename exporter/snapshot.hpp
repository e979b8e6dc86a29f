#pragma once

#include <prometheus/metric_family.h>

#include <chrono>
#include <string>
#include <vector>

namespace rdma_exporter {

struct CollectorOutcome {
  std::string name;
  std::vector<std::string> errors;  // empty: success
  double duration_seconds = 0;
};

// The result of one collection: the metric families, how every collector
// fared, and the rendered exposition (plain and gzip), made once and shared by
// every response that serves it.
struct Snapshot {
  std::vector<prometheus::MetricFamily> families;
  std::vector<CollectorOutcome> outcomes;
  std::chrono::steady_clock::time_point taken;
  std::string text;
  std::string gzip;

  bool all_succeeded() const;
};

}  // namespace rdma_exporter
