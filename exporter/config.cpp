#include "exporter/config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "collectors/device_filter.hpp"
#include "collectors/ethtool/mapping.hpp"
#include "common/file.hpp"
#include "common/yaml_walker.hpp"

namespace rdma_exporter {
namespace {

std::string pattern_problem(const std::string& pattern) {
  Status s = check_device_pattern(pattern);
  return s ? std::string() : s.error().message;
}

std::string qp_type_problem(const std::string& v) {
  return one_of(v, {"RC", "UC", "UD", "XRC_INI", "XRC_TGT", "RAW_PACKET", "GSI", "SMI", "DRIVER"});
}

std::string aggregate_problem(const std::string& v) {
  return one_of(v, {"comm", "cgroup", "qp_type"});
}

void read_qp_counters(Walker& w, const YAML::Node& node, const std::string& path,
                      QpCountersOptions& q) {
  using PortRule = QpCountersOptions::PortRule;
  using ManualRule = QpCountersOptions::ManualRule;
  auto port_rule = [&w](const YAML::Node& n, const std::string& p, PortRule& r) {
    std::string mode = "observe";
    std::vector<std::string> auto_by = {"qp_type", "pid"};
    const std::size_t before = w.take_count();
    w.mapping(n, p,
              {{"device", w.optional_string_into(r.device, pattern_problem)},
               {"port", w.port_number(r.port)},
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
        w.take_count() == before) {
      w.error_at(n["auto_by"], p + ".auto_by", "auto mode needs qp_type, pid or both");
    }
  };
  auto manual_rule = [&w](const YAML::Node& n, const std::string& p, ManualRule& r) {
    const std::size_t before = w.take_count();
    w.mapping(n, p,
              {{"name", w.string(r.name)},
               {"comm", w.optional_string(r.comm, pattern_problem)},
               {"pid", w.optional_pid(r.pid)},
               {"cgroup", w.optional_string(r.cgroup, pattern_problem)},
               {"qp_types", w.string_list(r.qp_types, qp_type_problem)}});
    if (r.name.empty() && w.take_count() == before) {
      w.error_at(n, p, "a manual rule needs a name (unique among the rules)");
    }
    if (!r.comm && !r.pid && !r.cgroup && r.qp_types.empty() && w.take_count() == before) {
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
             {"proc_root", w.string(q.proc_root)}});
  q.max_series = static_cast<std::size_t>(max_series);
  std::set<std::string> names;
  for (const auto& r : q.manual_rules) {
    if (!r.name.empty() && !names.insert(r.name).second) {
      w.error_at(node, path + ".manual_rules", "the name \"" + r.name + "\" is used twice");
    }
  }
}

// A counter name list: kernel names are plain words.
std::string counter_name_problem(const std::string& v) {
  if (v.empty()) return "expected a counter name, got an empty string";
  for (char c : v) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0 || c == ',') {
      return "expected one counter name per list entry, got \"" + v + "\"";
    }
  }
  return {};
}

void read_optional_counters(Walker& w, const YAML::Node& node, const std::string& path,
                            OptionalCountersOptions& o) {
  using PortRule = OptionalCountersOptions::PortRule;
  auto port_rule = [&w](const YAML::Node& n, const std::string& p, PortRule& r) {
    w.mapping(n, p,
              {{"device", w.optional_string_into(r.device, pattern_problem)},
               {"port", w.port_number(r.port)},
               {"enable", w.string_list(r.enable, counter_name_problem)},
               {"own", w.boolean(r.own)}});
  };
  w.mapping(node, path,
            {{"ports", w.list_of<PortRule>(o.ports, port_rule)},
             {"reconcile_interval", w.duration(o.reconcile_interval)}});
}

void read_ethtool(Walker& w, const YAML::Node& node, const std::string& path, EthtoolOptions& e) {
  auto mapping = [&w](const YAML::Node& n, const std::string& p, EthtoolMapping& m) {
    const std::size_t before = w.take_count();
    std::string scale;
    w.mapping(n, p,
              {{"driver", w.optional_string_into(m.driver, pattern_problem)},
               {"stat", w.string(m.stat)},
               {"metric", w.string(m.metric)},
               {"direction", w.string(m.direction)},
               {"reason", w.string(m.reason)},
               {"scale", w.string(scale)}});
    if (!scale.empty()) {
      double v = 0;
      auto [end, ec] = std::from_chars(scale.data(), scale.data() + scale.size(), v);
      if (ec != std::errc() || end != scale.data() + scale.size()) {
        return w.error_at(n["scale"], p + ".scale",
                          "expected a number such as 1 or 1e-6, got \"" + scale + "\"");
      }
      m.scale = v;
    }
    if (w.take_count() != before) return;
    if (std::string problem = ethtool::mapping_problem(m); !problem.empty()) {
      w.error_at(n, p, problem);
    }
  };
  w.mapping(node, path,
            {{"raw_stats", w.boolean(e.raw_stats)},
             {"raw_stats_include", w.string_list(e.raw_stats_include, pattern_problem)},
             {"mappings", w.list_of<EthtoolMapping>(e.mappings, mapping)}});
}

}  // namespace

std::vector<std::string> parse_config(const std::string& yaml_text, const std::string& source,
                                      Config& c) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    Walker w(source);
    w.error(e.mark, "(syntax)", e.msg);
    return w.take();
  }
  Walker w(source);
  w.mapping(
      root, "",
      {
          {"web",
           [&](const YAML::Node& n, const std::string& p) {
             w.mapping(n, p,
                       {{"listen_address", w.string(c.web.listen_address)},
                        {"max_connections", w.integer(c.web.max_connections, 1, 100000)},
                        {"read_timeout", w.duration(c.web.read_timeout)},
                        {"idle_timeout", w.duration(c.web.idle_timeout)},
                        {"write_timeout", w.duration(c.web.write_timeout)},
                        {"max_request_bytes", w.size(c.web.max_request_bytes, 1024, 1 << 20)},
                        {"enable_lifecycle", w.boolean(c.web.enable_lifecycle)},
                        {"config_file", w.string(c.web.config_file)}});
           }},
          {"collection",
           [&](const YAML::Node& n, const std::string& p) {
             w.mapping(n, p,
                       {{"max_age", w.duration(c.collection.max_age)},
                        {"netlink_timeout", w.duration(c.collection.netlink_timeout)}});
           }},
          {"devices",
           [&](const YAML::Node& n, const std::string& p) {
             w.mapping(n, p,
                       {{"include", w.string_list(c.devices.include, pattern_problem)},
                        {"exclude", w.string_list(c.devices.exclude, pattern_problem)}});
           }},
          {"sysfs",
           [&](const YAML::Node& n, const std::string& p) {
             w.mapping(n, p, {{"root", w.string(c.sysfs.root)}});
           }},
          {"collectors",
           [&](const YAML::Node& n, const std::string& p) {
             w.mapping(n, p,
                       {{"devices", w.boolean(c.collectors.devices)},
                        {"hw_counters", w.boolean(c.collectors.hw_counters)},
                        {"resources", w.boolean(c.collectors.resources)},
                        {"sysfs", w.boolean(c.collectors.sysfs)},
                        {"qp_counters", w.boolean(c.collectors.qp_counters)},
                        {"optional_counters", w.boolean(c.collectors.optional_counters)},
                        {"ethtool", w.boolean(c.collectors.ethtool)},
                        {"dcb", w.boolean(c.collectors.dcb)}});
           }},
          {"qp_counters", [&](const YAML::Node& n,
                              const std::string& p) { read_qp_counters(w, n, p, c.qp_counters); }},
          {"optional_counters",
           [&](const YAML::Node& n, const std::string& p) {
             read_optional_counters(w, n, p, c.optional_counters);
           }},
          {"ethtool",
           [&](const YAML::Node& n, const std::string& p) { read_ethtool(w, n, p, c.ethtool); }},
          {"dcb",
           [&](const YAML::Node& n, const std::string& p) {
             w.mapping(n, p, {{"dscp_priority", w.boolean(c.dcb.dscp_priority)}});
           }},
          {"log",
           [&](const YAML::Node& n, const std::string& p) {
             w.mapping(n, p, {{"level", w.string(c.log.level)}});
           }},
          {"probe", [&](const YAML::Node& n,
                        const std::string& p) { probe::parse_probe_options(w, n, p, c.probe); }},
          {"otlp",
           [&](const YAML::Node& n, const std::string& p) {
             auto& o = c.otlp;
             std::string choice;  // encoding and compression land in o as enums
             // A duration that must be positive; a rejected value keeps the default.
             auto positive = [&w](Duration& out) -> Walker::Field {
               return [&w, &out](const YAML::Node& v, const std::string& key) {
                 Duration d = out;
                 const std::size_t before = w.take_count();
                 w.duration(d)(v, key);
                 if (w.take_count() != before) return;
                 if (d.count() <= 0) return w.error_at(v, key, "must be positive");
                 out = d;
               };
             };
             // A mapping of strings to strings, each pair checked by `check`.
             auto pairs =
                 [&w](OtlpOptions::Pairs& out,
                      std::function<std::string(const std::string&, const std::string&)> check)
                 -> Walker::Field {
               return [&w, &out, check](const YAML::Node& v, const std::string& key) {
                 if (v.IsNull()) return out.clear();
                 if (!v.IsMap())
                   return w.error_at(v, key, "expected a mapping of names to strings");
                 out.clear();
                 for (const auto& kv : v) {
                   if (!kv.second.IsScalar()) {
                     w.error_at(kv.second, key + "." + kv.first.Scalar(), "expected a string");
                     continue;
                   }
                   if (std::string problem = check(kv.first.Scalar(), kv.second.Scalar());
                       !problem.empty()) {
                     w.error_at(kv.first, key + "." + kv.first.Scalar(), problem);
                     continue;
                   }
                   out.emplace_back(kv.first.Scalar(), kv.second.Scalar());
                 }
               };
             };
             w.mapping(
                 n, p,
                 {{"enabled", w.boolean(o.enabled)},
                  {"endpoint", w.optional_string_into(o.endpoint, otlp_endpoint_problem)},
                  {"encoding", w.optional_string_into(choice,
                                                      [&o](const std::string& v) {
                                                        return otlp_encoding_problem(v, o.encoding);
                                                      })},
                  {"compression", w.optional_string_into(choice,
                                                         [&o](const std::string& v) {
                                                           return otlp_compression_problem(
                                                               v, o.compression);
                                                         })},
                  {"headers", pairs(o.headers, otlp_header_problem)},
                  {"interval", positive(o.interval)},
                  {"timeout", positive(o.timeout)},
                  {"max_backoff", positive(o.max_backoff)},
                  {"queue_size", w.size(o.queue_size, 1, 1000)},
                  {"service_name", w.optional_string_into(o.service_name,
                                                          [](const std::string& v) {
                                                            return v.empty() ? "must not be empty"
                                                                             : "";
                                                          })},
                  {"resource_attributes",
                   pairs(o.resource_attributes, [](const std::string& k, const std::string&) {
                     return otlp_attribute_problem(k);
                   })}});
           }},
      });
  auto errors = w.take();
  for (auto& e : validate_config(c)) errors.push_back(source + ": " + e);
  return errors;
}

std::vector<std::string> validate_config(const Config& c) {
  std::vector<std::string> errors;
  ListenAddress addr;
  if (!parse_listen_address(c.web.listen_address, addr)) {
    errors.push_back("web.listen_address: expected host:port, :port or [v6]:port, got \"" +
                     c.web.listen_address + "\"");
  }
  if (c.web.read_timeout.count() <= 0) errors.push_back("web.read_timeout: must be positive");
  if (c.web.idle_timeout.count() <= 0) errors.push_back("web.idle_timeout: must be positive");
  if (c.web.write_timeout.count() <= 0) errors.push_back("web.write_timeout: must be positive");
  if (c.collection.netlink_timeout.count() <= 0) {
    errors.push_back("collection.netlink_timeout: must be positive");
  }
  if (c.sysfs.root.empty()) errors.push_back("sysfs.root: must not be empty");
  if (c.qp_counters.reconcile_interval.count() <= 0) {
    errors.push_back("qp_counters.reconcile_interval: must be positive");
  }
  if (c.optional_counters.reconcile_interval.count() <= 0) {
    errors.push_back("optional_counters.reconcile_interval: must be positive");
  }
  static const char* kLevels[] = {"debug", "info", "warn", "error"};
  if (std::find(std::begin(kLevels), std::end(kLevels), c.log.level) == std::end(kLevels)) {
    errors.push_back("log.level: expected debug, info, warn or error, got \"" + c.log.level + "\"");
  }
  for (auto& e : validate_otlp_options(c.otlp)) errors.push_back(std::move(e));
  for (auto& e : probe::validate_probe_options(c.probe)) errors.push_back(std::move(e));
  for (const auto* list : {&c.devices.include, &c.devices.exclude}) {
    for (const auto& p : *list) {
      if (std::string problem = pattern_problem(p); !problem.empty()) {
        errors.push_back("devices: " + problem);
      }
    }
  }
  return errors;
}

std::string resolve_relative(const std::string& path, const std::string& file) {
  if (path.empty() || path.front() == '/') return path;
  return (std::filesystem::path(file).parent_path() / path).lexically_normal().string();
}

std::vector<std::string> load_config_file(const std::string& path, Config& out) {
  auto text = read_file(path, kMaxConfigFileBytes, path);
  if (!text) {
    return {path + ": cannot read configuration file: " + std::strerror(text.error().code)};
  }
  auto errors = parse_config(*text, path, out);
  out.web.config_file = resolve_relative(out.web.config_file, path);
  return errors;
}

}  // namespace rdma_exporter
