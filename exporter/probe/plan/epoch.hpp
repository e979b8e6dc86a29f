#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/metric_sink.hpp"
#include "exporter/probe/plan/options.hpp"
#include "exporter/probe/plan/rails.hpp"
#include "exporter/probe/stats/stats.hpp"

namespace rdma_exporter::probe {

// A target as it is watched (discovered and probed): a change of its
// address, series labels or rail makes it a new one.
struct WatchKey {
  std::string address;
  Labels labels;  // target, then the target's own
  std::string rail;

  auto operator<=>(const WatchKey&) const = default;
};

struct WantedTarget {
  std::string name;  // its target label
  Target target;
};

// The targets wanted now, and where they came from.
struct WantedTargets {
  std::map<WatchKey, WantedTarget> targets;
  std::map<std::string, int> by_source;  // "static", "file_sd", "loopback"
  // Addresses listed more than once with other labels, classes or rail.
  std::set<std::string> conflicting;

  void add(const std::string& source, const std::string& name, const Target& t);
};

// One target per address, the first listed: the static targets, then the
// file_sd files' in the order the files are configured (docs/probe.md,
// "Targets").
WantedTargets wanted_targets(const std::vector<Target>& static_targets,
                             const std::vector<Target>& file_sd_targets);

// Who this host is, to find it in the target list.
struct ThisHost {
  std::vector<InterfaceAddress> addresses;
  std::string hostname;
  unsigned short port = 0;  // its probe control port
};

// This epoch's picks (docs/probe.md, "Pinglists").
struct EpochPick {
  // Address -> the local rails it is probed from (empty: every rail).
  std::map<std::string, std::set<std::string>> chosen;
  PinglistReport report;  // report.group: this host's group
};

// Every host of this host's group, and `remote_per_rail` hosts of other
// groups per local rail. This host is the first target that names it, else
// hostname:port in the configured group. Pure: the epoch is given.
EpochPick pick_epoch(const WantedTargets& wanted, const ThisHost& self,
                     std::vector<std::string> local_rails, const PinglistOptions& options,
                     uint64_t epoch);

}  // namespace rdma_exporter::probe
