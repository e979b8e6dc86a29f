#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/metric_sink.hpp"
#include "exporter/probe/plan/options.hpp"
#include "exporter/probe/plan/rails.hpp"
#include "exporter/probe/wire/protocol.hpp"

namespace rdma_exporter::probe {

// The target label of the loopback target (probe.loopback).
inline constexpr const char* kLoopbackTarget = "loopback";

// The labels of a pair's series: target, the local device and port, the
// remote device and port, the local port's rail, op, size, tclass, then the
// target's own.
Labels series_labels(const std::string& target, const RailPort& local, const wire::PortAd& remote,
                     const ProbeClass& cls,
                     const std::map<std::string, std::string>& target_labels);

// The labels of a local port's scope counters (ScopeStats): device, port,
// rail, op, size, tclass and `scope` ("group" or "remote", as
// PlannedProber::scope).
Labels scope_labels(const RailPort& local, const ProbeClass& cls, const char* scope);

// A local port as planning sees it.
struct PlanPort {
  RailPort port;                  // device, port number, rail
  std::array<uint8_t, 16> gid{};  // its GID now
  // Which UD queue pair it has (0: none). Any number that changes when the
  // queue pair is made anew: its probers are then made anew too.
  std::uintptr_t ud_instance = 0;
};

// A target host as planning sees it: what discovery last heard.
struct PlanTarget {
  std::string address;
  std::string name;  // its target label
  Target target;     // labels, classes, rail
  std::vector<wire::PortAd> ports;
  std::set<std::string> rails;  // local rails it is probed from (empty: every rail)
};

// What makes a prober: a prober is kept across plans while its key stays,
// and made anew when any part changes (a port's GID or UD queue pair
// included).
struct ProberKey {
  std::string address;
  std::string class_name;
  Labels labels;
  std::array<uint8_t, 16> gid{};
  std::uintptr_t ud_instance = 0;

  auto operator<=>(const ProberKey&) const = default;
};

struct PlannedProber {
  ProberKey key;
  std::size_t local = 0;   // into the ports
  std::size_t target = 0;  // into the targets
  std::size_t remote = 0;  // into that target's ports
  std::size_t cls = 0;     // into the classes
  // UD latency histograms' scope: "group" for the loopback target and the
  // targets of this host's group, "remote" for the others.
  const char* scope = "group";
};

struct PlanInputs {
  const std::vector<PlanPort>& ports;
  const std::vector<PlanTarget>& targets;
  const std::vector<ProbeClass>& classes;
  bool cross_rail = false;
  std::string group_label;  // probe.pinglist.group_label
  std::string self_group;   // this host's group
};

// A target's scope: "group" for the loopback target and the targets of
// this host's own group (by the group label), "remote" for the others.
const char* target_scope(const PlanTarget& target, const PlanInputs& in);
// The GIDs of the ports the targets of scope "group" listed: the probers
// this host's UD ports count in scope group as responders (the pinglist
// probes every host of the group, so each of them is a target here).
std::set<std::array<uint8_t, 16>> group_port_gids(const PlanInputs& in);

// Every prober to run: for each target, each pair of a local port and a
// target port that rail_pairs() pairs (on the target's rails for this epoch),
// each class the target names (all when it names none) and the local port
// number allows. One per key, the first; in the order of targets, pairs and
// classes. Pure: no I/O, no clock.
std::vector<PlannedProber> plan_probers(const PlanInputs& in);

}  // namespace rdma_exporter::probe
