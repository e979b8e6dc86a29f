#pragma once

#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "common/result.hpp"
#include "exporter/snapshot.hpp"

namespace rdma_exporter {

// What the collect[] and exclude[] parameters of a /metrics request ask
// for, as node_exporter has them: only the collectors named, or all but
// them. The exporter's own metrics are always served; each collector's
// rdma_exporter_collector_* series go with its metrics.
struct CollectorFilter {
  enum class Mode { all, only, except };
  Mode mode = Mode::all;
  std::set<std::string, std::less<>> names;
};

// The filter of a request target. An error (for a 400 answer) when it has
// both parameters, a malformed query string, or a name that is no
// collector's.
Result<CollectorFilter> parse_collector_filter(std::string_view target);

// What the filter selects from `snapshot` (Snapshot::only). An error (for a
// 400 answer) names a collector that is not enabled, i.e. has no outcome in
// the snapshot.
Result<std::shared_ptr<Snapshot>> apply_collector_filter(const CollectorFilter& filter,
                                                         const Snapshot& snapshot);

}  // namespace rdma_exporter
