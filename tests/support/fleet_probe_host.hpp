#pragma once

// The probe's statistics of one host in the fleet mode, filled as the probe
// fills them, for counting and serving its series without a fabric:
// bench/pinglist_bench counts a host's series, fake_rdma_host serves them
// beside its collection (the series budget test, docs/metrics.md).

#include <cstddef>
#include <string>
#include <vector>

#include "exporter/probe/stats/stats.hpp"

namespace rdma_exporter::testing {

// What one local port probes in an epoch.
struct FleetProbePort {
  std::size_t targets = 0;  // target ports (one per target host, on its rail)
  bool own_group = false;   // some of them are in this host's group
  bool remote = false;      // some are in other groups
};

// Fills `stats` for a host whose port i is mlx5_i port 1 on rail i and that
// probes `target_hosts` hosts (its group's and the remote picks of every
// rail, from file_sd): per target host whether it answers and its ports, per
// pair its counters and last success (one UD class, bounded histograms), per
// port and scope (own group, remote) a latency histogram and the scope's
// counters, per port the responder's delay and the prober's (as on devices
// with completion timestamps), the UD queue pair's port, the devices' and
// ports' state, the event loop's stalls and the pinglist. Series that appear
// only on failures (errors, invalid probes, lost paths, rejections) are not
// there.
//
// `identity` names the host and its targets; left empty, the host is in group
// "r" at "h:1" and its targets are numbered (10.0.<t>.1:10911 in the pairs,
// 10.1.<t>.1:10911 in the target list), which is enough to count series.
struct FleetProbeIdentity {
  std::string group = "r";
  std::string address = "h:1";
  // Per port, each target host it probes: its address and group (the
  // pair's target and rack labels), overriding FleetProbePort::targets.
  struct Target {
    std::string address;
    std::string group;
  };
  std::vector<std::vector<Target>> port_targets;
  // The target hosts (overriding `target_hosts`).
  std::vector<std::string> target_hosts;
};
// `pair_counters`: probe.pair_series all (the pairs' counters and last
// success) or failing (healthy pairs have no series).
void fill_fleet_probe_stats(probe::ProbeStats& stats, const std::vector<FleetProbePort>& ports,
                            std::size_t target_hosts, const FleetProbeIdentity& identity = {},
                            bool pair_counters = true);

}  // namespace rdma_exporter::testing
