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
#include "collectors/probe/targets.hpp"
#include "common/file.hpp"
#include "common/log.hpp"
#include "common/yaml_walker.hpp"

namespace rdma_exporter {
namespace {

void read_probe(Walker& w, const YAML::Node& node, const std::string& path,
                probe::ProbeOptions& o) {
  using probe::ProbeClass;
  using probe::Target;
  // An integer field stored in a narrower or optional type.
  auto int_into = [&w](auto& out, int min, int max) -> Walker::Field {
    return [&w, &out, min, max](const YAML::Node& n, const std::string& key) {
      int v = 0;
      const std::size_t before = w.take_count();
      w.integer(v, min, max)(n, key);
      if (w.take_count() == before) out = static_cast<std::remove_cvref_t<decltype(*&out)>>(v);
    };
  };
  auto optional_int = [&w](auto& out, int min, int max) -> Walker::Field {
    return [&w, &out, min, max](const YAML::Node& n, const std::string& key) {
      int v = 0;
      const std::size_t before = w.take_count();
      w.integer(v, min, max)(n, key);
      if (w.take_count() == before)
        out = static_cast<typename std::remove_cvref_t<decltype(out)>::value_type>(v);
    };
  };
  auto microseconds = [&w](std::chrono::microseconds& out) -> Walker::Field {
    return [&w, &out](const YAML::Node& n, const std::string& key) {
      const std::string text = n.IsScalar() ? n.Scalar() : std::string();
      long long us = 0;
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), us);
      if (ec == std::errc() && us >= 0 && std::string_view(p) == "us") {
        out = std::chrono::microseconds(us);
        return;
      }
      Duration d{};
      if (n.IsScalar() && parse_duration(text, d)) {
        out = d;
        return;
      }
      w.error_at(n, key, "expected a duration such as 50us, 1ms or 0s, got \"" + text + "\"");
    };
  };
  auto probe_class = [&](const YAML::Node& n, const std::string& p, ProbeClass& c) {
    std::string op = "write";
    w.mapping(n, p,
              {{"name", w.string(c.name)},
               {"op", w.optional_string_into(op,
                                             [](const std::string& v) {
                                               return one_of(v, {"send", "write", "read"});
                                             })},
               {"size", int_into(c.size, 1, 1 << 30)},
               {"tclass", int_into(c.tclass, 0, 255)},
               {"sl", int_into(c.sl, 0, 15)},
               {"port", optional_int(c.port, 1, 255)},
               {"gid_index", optional_int(c.gid_index, -1, 65535)},
               {"mtu", int_into(c.mtu, 256, 4096)},
               {"interval", w.duration(c.interval)},
               {"timeout", w.duration(c.timeout)},
               {"busy_poll", microseconds(c.busy_poll)}});
    c.op = op == "send" ? probe::Op::send : op == "read" ? probe::Op::read : probe::Op::write;
  };
  auto target = [&](const YAML::Node& n, const std::string& p, Target& t) {
    w.mapping(n, p,
              {{"address", w.string(t.address)},
               {"labels",
                [&w, &t](const YAML::Node& v, const std::string& key) {
                  if (v.IsNull()) return;
                  if (!v.IsMap())
                    return w.error_at(v, key, "expected a mapping of names to strings");
                  for (const auto& kv : v) {
                    const std::string name = kv.first.Scalar();
                    if (!kv.second.IsScalar()) {
                      w.error_at(kv.second, key + "." + name, "expected a string");
                    } else if (std::string problem = probe::target_label_problem(name);
                               !problem.empty()) {
                      w.error_at(kv.first, key + "." + name, problem);
                    } else {
                      t.labels[name] = kv.second.Scalar();
                    }
                  }
                }},
               {"classes", w.string_list(t.classes)}});
  };
  w.mapping(
      node, path,
      {{"enabled", w.boolean(o.enabled)},
       {"device", w.string(o.device)},
       {"port", int_into(o.port, 1, 255)},
       {"gid_index", int_into(o.gid_index, -1, 65535)},
       {"listen_address", w.string(o.listen_address)},
       {"classes", w.list_of<ProbeClass>(o.classes, probe_class)},
       {"targets", w.list_of<Target>(o.targets, target)},
       {"file_sd", w.string_list(o.file_sd)},
       {"file_sd_refresh", w.duration(o.file_sd_refresh)},
       {"loopback", w.boolean(o.loopback)},
       {"connect_timeout", w.duration(o.connect_timeout)},
       {"backoff_initial", w.duration(o.backoff_initial)},
       {"backoff_max", w.duration(o.backoff_max)},
       {"secret_file", w.string(o.secret_file)},
       {"max_sessions", w.integer(o.max_sessions, 1, 65536)},
       {"max_sessions_per_source", w.integer(o.max_sessions_per_source, 1, 65536)},
       {"setups_per_minute_per_source", w.integer(o.setups_per_minute_per_source, 1, 1000000)},
       {"max_message_size", int_into(o.max_message_size, 1, 1 << 30)},
       {"idle_timeout", w.duration(o.idle_timeout)},
       {"memory", w.optional_string_into(o.memory, [](const std::string& v) {
          return one_of(v, {"host", "udmabuf"});
        })}});
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
  std::map<std::string, Walker::Field> sections = {
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
                   {{"include", w.string_list(c.devices.include, device_pattern_problem)},
                    {"exclude", w.string_list(c.devices.exclude, device_pattern_problem)}});
       }},
      {"sysfs",
       [&](const YAML::Node& n, const std::string& p) {
         w.mapping(n, p, {{"root", w.string(c.sysfs.root)}});
       }},
      {"log",
       [&](const YAML::Node& n, const std::string& p) {
         w.mapping(n, p, {{"level", w.string(c.log.level)}});
       }},
      {"probe", [&](const YAML::Node& n, const std::string& p) { read_probe(w, n, p, c.probe); }},
      {"otlp",
       [&](const YAML::Node& n, const std::string& p) { parse_otlp_options(w, n, p, c.otlp); }},
  };
  // The registry's collectors: each one's switch in `collectors`, and its
  // own section for its options.
  sections["collectors"] = [&](const YAML::Node& n, const std::string& p) {
    std::map<std::string, Walker::Field> switches;
    for (const auto& e : collector_registry()) {
      switches[e.name] = [&w, &c, name = e.name](const YAML::Node& v, const std::string& key) {
        bool on = c.collectors.enabled(name);
        w.boolean(on)(v, key);
        c.collectors.set_enabled(name, on);
      };
    }
    w.mapping(n, p, switches);
  };
  for (const auto& e : collector_registry()) {
    if (!e.parse_options) continue;
    sections[e.name] = [&w, &c, &e](const YAML::Node& n, const std::string& p) {
      e.parse_options(w, n, p, c.collectors.options_of(e.name));
    };
  }
  w.mapping(root, "", sections);
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
  for (const auto& e : collector_registry()) {
    if (!e.validate) continue;
    for (auto& problem : e.validate(c.collectors.options_of(e.name))) {
      errors.push_back(std::move(problem));
    }
  }
  static const char* kLevels[] = {"debug", "info", "warn", "error"};
  if (std::find(std::begin(kLevels), std::end(kLevels), c.log.level) == std::end(kLevels)) {
    errors.push_back("log.level: expected debug, info, warn or error, got \"" + c.log.level + "\"");
  }
  for (auto& e : validate_otlp_options(c.otlp)) errors.push_back(std::move(e));
  for (auto& e : probe::validate_probe_options(c.probe)) errors.push_back(std::move(e));
  for (const auto* list : {&c.devices.include, &c.devices.exclude}) {
    for (const auto& p : *list) {
      if (std::string problem = device_pattern_problem(p); !problem.empty()) {
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

void apply_log_level(const Config& config) {
  log::Level level = log::Level::info;
  log::parse_level(config.log.level, level);
  log::set_level(level);
}

}  // namespace rdma_exporter
