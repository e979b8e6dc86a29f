#pragma once

// Looks up samples in a collection's metric families, for assertions.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "exporter/collection.hpp"

namespace rdma_exporter::testing {

// True when a series' labels include every one of `labels`.
inline bool has_labels(const prometheus::ClientMetric& m, const Labels& labels) {
  return std::all_of(labels.begin(), labels.end(), [&](const auto& want) {
    return std::any_of(m.label.begin(), m.label.end(), [&](const auto& l) {
      return l.name == want.first && l.value == want.second;
    });
  });
}

// The value of the one sample of `name` whose labels include `labels`; NaN
// when there is none, or more than one.
inline double sample(const Snapshot& s, const std::string& name, const Labels& labels = {}) {
  double found = std::nan("");
  bool seen = false;
  for (const auto& f : s.families) {
    if (f.name != name) continue;
    for (const auto& m : f.metric) {
      if (!has_labels(m, labels)) continue;
      if (seen) return std::nan("");
      seen = true;
      found = f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  return found;
}

// Number of series of a family (0 when it is absent) whose labels include
// `labels`.
inline std::size_t series_count(const Snapshot& s, const std::string& name,
                                const Labels& labels = {}) {
  for (const auto& f : s.families) {
    if (f.name == name) {
      return static_cast<std::size_t>(std::count_if(
          f.metric.begin(), f.metric.end(), [&](const auto& m) { return has_labels(m, labels); }));
    }
  }
  return 0;
}

// A histogram series' count and sum.
struct HistogramSample {
  uint64_t count = 0;
  double sum = 0;
};

inline bool has_family(const Snapshot& s, const std::string& name) {
  return series_count(s, name) > 0;
}

// What `source.add_metrics(sink, args...)` adds, as a snapshot.
template <typename T, typename... Args>
Snapshot metrics_of(const T& source, const Args&... args) {
  MetricSink sink;
  source.add_metrics(sink, args...);
  Snapshot s;
  s.families = sink.take();
  return s;
}

}  // namespace rdma_exporter::testing
