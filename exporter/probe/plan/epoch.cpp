#include "exporter/probe/plan/epoch.hpp"

#include <algorithm>

#include "exporter/probe/plan/pinglist.hpp"
#include "exporter/probe/plan/targets.hpp"

namespace rdma_exporter::probe {

void WantedTargets::add(const std::string& source, const std::string& name, const Target& t) {
  ++by_source[source];
  Labels l = {{"target", name}};
  for (const auto& [k, v] : t.labels) l.emplace_back(k, v);
  targets.emplace(WatchKey{t.address, std::move(l), t.rail}, WantedTarget{name, t});
}

WantedTargets wanted_targets(const std::vector<Target>& static_targets,
                             const std::vector<Target>& file_sd_targets) {
  std::vector<Target> entries = static_targets;
  entries.insert(entries.end(), file_sd_targets.begin(), file_sd_targets.end());
  const TargetSelection selection = first_per_address(entries);
  WantedTargets out;
  for (std::size_t i : selection.kept) {
    out.add(i < static_targets.size() ? "static" : "file_sd", entries[i].address, entries[i]);
  }
  out.conflicting.insert(selection.conflicting.begin(), selection.conflicting.end());
  return out;
}

EpochPick pick_epoch(const WantedTargets& wanted, const ThisHost& self,
                     std::vector<std::string> local_rails, const PinglistOptions& options,
                     uint64_t epoch) {
  std::vector<FleetMember> members;
  std::string self_id;
  std::string self_group = options.group;
  for (const auto& [key, w] : wanted.targets) {
    const auto g = w.target.labels.find(options.group_label);
    const std::string group = g == w.target.labels.end() ? "" : g->second;
    members.push_back({w.target.address, group});
    if (self_id.empty() &&
        names_this_host(w.target.address, self.port, self.addresses, self.hostname)) {
      self_id = w.target.address;
      self_group = group;
    }
  }
  const bool listed = !self_id.empty();
  if (!listed) self_id = self.hostname + ":" + std::to_string(self.port);
  std::sort(local_rails.begin(), local_rails.end());
  local_rails.erase(std::unique(local_rails.begin(), local_rails.end()), local_rails.end());
  // Without a port in use the picks are still made (on no rail), so that
  // targets are discovered and reported meanwhile.
  if (local_rails.empty()) local_rails.emplace_back();
  const Pinglist pinglist = compute_pinglist(members, self_id, self_group, local_rails,
                                             PinglistSettings{options.remote_per_rail, epoch});
  EpochPick out;
  for (std::size_t i : pinglist.group) out.chosen[members[i].id];
  std::set<std::string> remote_hosts;
  for (const auto& [rail, hosts] : pinglist.remote) {
    for (std::size_t i : hosts) {
      out.chosen[members[i].id].insert(rail);
      remote_hosts.insert(members[i].id);
    }
  }
  std::set<std::string> fleet;
  for (const auto& m : members) fleet.insert(m.id);
  out.report = PinglistReport{
      listed, self_group, self_id, epoch, pinglist.group.size(), remote_hosts.size(), fleet.size()};
  return out;
}

}  // namespace rdma_exporter::probe
