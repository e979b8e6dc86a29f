#include "collectors/qp_counters/options.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include "collectors/device_filter.hpp"

namespace rdma_exporter {
namespace {

std::string qp_type_problem(const std::string& v) {
  return one_of(v, {"RC", "UC", "UD", "XRC_INI", "XRC_TGT", "RAW_PACKET", "GSI", "SMI", "DRIVER"});
}

std::string aggregate_problem(const std::string& v) {
  return one_of(v, {"comm", "cgroup", "qp_type", "pod"});
}

}  // namespace

void parse_qp_counters_options(Walker& w, const YAML::Node& node, const std::string& path,
                               QpCountersOptions& q) {
  using PortRule = QpCountersOptions::PortRule;
  using ManualRule = QpCountersOptions::ManualRule;
  auto port_rule = [&w](const YAML::Node& n, const std::string& p, PortRule& r) {
    std::string mode = "observe";
    std::vector<std::string> auto_by = {"qp_type", "pid"};
    const Walker::Section section = w.section();
    w.mapping(n, p,
              {{"device", w.optional_string_into(r.device, device_pattern_problem)},
               {"port", w.integer(r.port, 0, 65535)},
               {"mode", w.string(mode)},
               {"auto_by", w.string_list(auto_by,
                                         [](const std::string& v) {
                                           return one_of(v, {"qp_type", "pid"});
                                         })},
               {"take_over", w.boolean(r.take_over)},
               {"restore_on_exit", w.boolean(r.restore_on_exit)}});
    if (mode == "observe")
      r.mode = QpCountersOptions::Mode::observe;
    else if (mode == "auto")
      r.mode = QpCountersOptions::Mode::auto_mode;
    else if (mode == "manual")
      r.mode = QpCountersOptions::Mode::manual;
    else
      w.error_at(n["mode"], p + ".mode", one_of(mode, {"observe", "auto", "manual"}));
    r.by_qp_type = std::find(auto_by.begin(), auto_by.end(), "qp_type") != auto_by.end();
    r.by_pid = std::find(auto_by.begin(), auto_by.end(), "pid") != auto_by.end();
    if (r.mode == QpCountersOptions::Mode::auto_mode && !r.by_qp_type && !r.by_pid &&
        !section.failed()) {
      w.error_at(n["auto_by"], p + ".auto_by", "auto mode needs qp_type, pid or both");
    }
  };
  auto manual_rule = [&w](const YAML::Node& n, const std::string& p, ManualRule& r) {
    const Walker::Section section = w.section();
    w.mapping(n, p,
              {{"name", w.string(r.name)},
               {"comm", w.optional_string(r.comm, device_pattern_problem)},
               {"pid", w.integer(r.pid, 1, 1 << 30)},
               {"cgroup", w.optional_string(r.cgroup, device_pattern_problem)},
               {"qp_types", w.string_list(r.qp_types, qp_type_problem)}});
    if (r.name.empty() && !section.failed()) {
      w.error_at(n, p, "a manual rule needs a name (unique among the rules)");
    }
    if (!r.comm && !r.pid && !r.cgroup && r.qp_types.empty() && !section.failed()) {
      w.error_at(n, p, "a manual rule needs at least one of comm, pid, cgroup, qp_types");
    }
  };
  int max_series = static_cast<int>(q.max_series);
  w.mapping(node, path,
            {{"ports", w.list_of<PortRule>(q.ports, port_rule)},
             {"manual_rules", w.list_of<ManualRule>(q.manual_rules, manual_rule)},
             {"reconcile_interval", w.duration(q.reconcile_interval)},
             {"cgroup_label", w.boolean(q.cgroup_label)},
             {"aggregate_by", w.string_list(q.aggregate_by, aggregate_problem)},
             {"max_series", w.integer(max_series, 1, 1000000)},
             {"retired_ttl", w.duration(q.retired_ttl)},
             {"inventory_by_comm", w.boolean(q.inventory_by_comm)},
             {"inventory_by_pod", w.boolean(q.inventory_by_pod)},
             {"proc_root", w.string(q.proc_root)}});
  q.max_series = static_cast<std::size_t>(max_series);
  std::set<std::string> names;
  for (const auto& r : q.manual_rules) {
    if (!r.name.empty() && !names.insert(r.name).second) {
      w.error_at(node, path + ".manual_rules", "the name \"" + r.name + "\" is used twice");
    }
  }
}

std::vector<std::string> validate_qp_counters_options(const QpCountersOptions& q) {
  std::vector<std::string> errors;
  if (q.reconcile_interval.count() <= 0) {
    errors.emplace_back("qp_counters.reconcile_interval: must be positive");
  }
  return errors;
}

bool QpCountersOptions::writes() const {
  return std::any_of(ports.begin(), ports.end(),
                     [](const PortRule& p) { return p.mode != Mode::observe; });
}

}  // namespace rdma_exporter
