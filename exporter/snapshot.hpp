#pragma once

#include <prometheus/metric_family.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
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
  // Which collector made each sample: tags[f][m], for families[f].metric[m],
  // is i + 1 for outcomes[i]'s collector and 0 for the exporter's own
  // metrics. A sample without a tag counts as the exporter's own.
  std::vector<std::vector<uint16_t>> tags;

  bool all_succeeded() const;

  // The snapshot of a scrape that selects collectors: the samples of the
  // collectors named (as in outcomes) and the exporter's own, their
  // outcomes, and the text rendered from them (gzip left empty).
  std::shared_ptr<Snapshot> only(const std::set<std::string, std::less<>>& collectors) const;
};

}  // namespace rdma_exporter
