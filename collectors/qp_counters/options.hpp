#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/yaml_walker.hpp"

namespace rdma_exporter {

// Configuration of per-QP counter sets (the `qp_counters` section).
struct QpCountersOptions {
  enum class Mode { observe, auto_mode, manual };

  // How the exporter treats the ports a rule selects. Ports no rule selects
  // are observed: their counter sets are exported, their mode never changed.
  struct PortRule {
    std::string device = ".*";  // regular expression, whole device name
    uint32_t port = 0;          // 0: every port
    Mode mode = Mode::observe;
    bool by_qp_type = true;  // auto criteria
    bool by_pid = true;
    bool take_over = false;        // change a port whose mode someone else set
    bool restore_on_exit = false;  // put back the mode found at start
  };

  // Manual binding: every process whose QPs match gets a counter set of its
  // own on each port, for its matching QPs. All given criteria must match.
  struct ManualRule {
    std::string name;
    std::optional<std::string> comm;  // regular expression on /proc/<pid>/comm
    std::optional<uint32_t> pid;
    std::optional<std::string> cgroup;  // regular expression on the cgroup path
    std::vector<std::string> qp_types;  // "RC", "UD", ...; empty: every type
  };

  static constexpr const char* kCollector = "qp_counters";

  std::vector<PortRule> ports;
  std::vector<ManualRule> manual_rules;
  std::chrono::milliseconds reconcile_interval{std::chrono::seconds(10)};
  bool cgroup_label = false;
  // Sum counter sets into fewer series: any of "comm", "cgroup", "qp_type".
  std::vector<std::string> aggregate_by;
  std::size_t max_series = 1000;
  // How long a series whose counter sets are all gone is still exported.
  std::chrono::milliseconds retired_ttl{std::chrono::minutes(10)};
  bool inventory_by_comm = false;
  // namespace, pod, container on the QP inventory (with kubernetes.enabled).
  bool inventory_by_pod = false;
  std::string proc_root = "/proc";

  // Some port rule asks for auto or manual mode: kernel writes
  // (CAP_NET_ADMIN).
  bool writes() const;
};

// The `qp_counters` section, one message per problem.
void parse_qp_counters_options(Walker& w, const YAML::Node& node, const std::string& path,
                               QpCountersOptions& out);
std::vector<std::string> validate_qp_counters_options(const QpCountersOptions& q);

}  // namespace rdma_exporter
