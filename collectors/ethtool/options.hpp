#pragma once

#include <string>
#include <vector>

#include "common/yaml_walker.hpp"

namespace rdma_exporter {

// One way to turn a driver statistic into a metric: the `ethtool.mappings`
// entries of the configuration and the built-in tables (mapping.cpp) share
// this shape.
struct EthtoolMapping {
  std::string driver = ".*";  // regular expression on the driver name (whole)
  // Regular expression on the statistic name (whole). For per-priority
  // metrics its first capture group is the priority ("rx_prio([0-7])_pause").
  std::string stat;
  // The metric, by its name without rdma_netdev_ and _total:
  // pfc_pause_frames, pfc_pause_duration_seconds, priority_bytes,
  // priority_packets, priority_discards, ecn_marked_packets, cnp_packets,
  // discards.
  std::string metric;
  std::string direction;  // rx or tx, for the metrics that have a direction
  std::string reason;     // for priority_discards and discards
  double scale = 1;       // multiplies the value (1e-6: microseconds to seconds)
};

// The `ethtool` section.
struct EthtoolOptions {
  static constexpr const char* kCollector = "ethtool";

  // Also export every statistic as it is: rdma_netdev_ethtool_stat{name}.
  bool raw_stats = false;
  // Regular expressions on statistic names (whole) that raw_stats exports;
  // empty: all.
  std::vector<std::string> raw_stats_include;
  // Tried before the built-in tables; the first mapping that matches wins.
  std::vector<EthtoolMapping> mappings;
};

// The `ethtool` section, one message per problem.
void parse_ethtool_options(Walker& w, const YAML::Node& node, const std::string& path,
                           EthtoolOptions& out);

}  // namespace rdma_exporter
