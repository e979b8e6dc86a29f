#include "exporter/probe/plan/probers.hpp"

#include <algorithm>
#include <string_view>

namespace rdma_exporter::probe {

Labels series_labels(const std::string& target, const RailPort& local, const wire::PortAd& remote,
                     const ProbeClass& cls,
                     const std::map<std::string, std::string>& target_labels) {
  Labels l = {{"target", target},
              {"device", local.device},
              {"port", std::to_string(local.port)},
              {"remote_device", remote.device},
              {"remote_port", std::to_string(remote.port)},
              {"rail", local.rail},
              {"op", op_name(cls.op)},
              {"size", std::to_string(cls.size)},
              {"tclass", std::to_string(cls.tclass)}};
  for (const auto& [k, v] : target_labels) l.emplace_back(k, v);
  return l;
}

Labels scope_labels(const RailPort& local, const ProbeClass& cls, const char* scope) {
  return {{"device", local.device},
          {"port", std::to_string(local.port)},
          {"rail", local.rail},
          {"op", op_name(cls.op)},
          {"size", std::to_string(cls.size)},
          {"tclass", std::to_string(cls.tclass)},
          {"scope", scope}};
}

const char* target_scope(const PlanTarget& target, const PlanInputs& in) {
  const auto group_label = target.target.labels.find(in.group_label);
  const std::string group = group_label == target.target.labels.end() ? "" : group_label->second;
  return target.name == kLoopbackTarget || group == in.self_group ? "group" : "remote";
}

std::set<std::array<uint8_t, 16>> group_port_gids(const PlanInputs& in) {
  std::set<std::array<uint8_t, 16>> gids;
  for (const PlanTarget& target : in.targets) {
    if (std::string_view(target_scope(target, in)) != "group") continue;
    for (const wire::PortAd& port : target.ports) gids.insert(port.gid);
  }
  return gids;
}

std::vector<PlannedProber> plan_probers(const PlanInputs& in) {
  std::vector<RailPort> rail_ports;
  for (const auto& p : in.ports) rail_ports.push_back(p.port);
  std::vector<PlannedProber> out;
  std::set<ProberKey> seen;
  for (std::size_t t = 0; t < in.targets.size(); ++t) {
    const PlanTarget& target = in.targets[t];
    // Latency histograms of UD classes are kept per scope: this host's own
    // group, or another (which rotate every epoch: their own histograms
    // would be new series every epoch).
    const char* scope = target_scope(target, in);
    for (const auto& [l, r] :
         rail_pairs(rail_ports, target.ports, in.cross_rail, target.target.rail)) {
      const PlanPort& local = in.ports[l];
      if (!target.rails.empty() && !target.rails.contains(local.port.rail)) continue;
      for (std::size_t c = 0; c < in.classes.size(); ++c) {
        const ProbeClass& cls = in.classes[c];
        const auto& named = target.target.classes;
        if (!named.empty() && std::find(named.begin(), named.end(), cls.name) == named.end()) {
          continue;
        }
        if (cls.port && *cls.port != local.port.port) continue;
        ProberKey key{
            target.address, cls.name,
            series_labels(target.name, local.port, target.ports[r], cls, target.target.labels),
            local.gid, local.ud_instance};
        if (!seen.insert(key).second) continue;  // the same target twice
        out.push_back({std::move(key), l, t, r, c, scope});
      }
    }
  }
  return out;
}

}  // namespace rdma_exporter::probe
