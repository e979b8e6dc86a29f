#include "exporter/config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "collectors/device_filter.hpp"
#include "common/file.hpp"
#include "common/log.hpp"
#include "common/yaml_text.hpp"
#include "common/yaml_walker.hpp"

namespace rdma_exporter {

namespace {

// The web section: where and how the HTTP server listens.
void parse_web(Walker& w, const YAML::Node& n, const std::string& p, Config::Web& web) {
  w.mapping(n, p,
            {{"listen_address",
              [&](const YAML::Node& v, const std::string& key) {
                // One address, or a list of them.
                if (v.IsScalar()) {
                  web.listen_addresses = {v.Scalar()};
                } else {
                  w.string_list(web.listen_addresses)(v, key);
                }
              }},
             {"telemetry_path", w.string(web.telemetry_path)},
             {"max_connections", w.integer(web.max_connections, 1, 100000)},
             {"max_connections_per_source", w.integer(web.max_connections_per_source, 1, 100000)},
             {"read_timeout", w.duration(web.read_timeout)},
             {"header_timeout", w.duration(web.header_timeout)},
             {"idle_timeout", w.duration(web.idle_timeout)},
             {"write_timeout", w.duration(web.write_timeout)},
             {"max_request_bytes", w.integer(web.max_request_bytes, 1024, 1 << 20)},
             {"enable_lifecycle", w.boolean(web.enable_lifecycle)},
             {"config_file", w.string(web.config_file)}});
}

// The registry's collectors: each one's switch in `collectors`, and its
// own section for its options.
void add_collector_sections(Walker& w, Config& c, std::map<std::string, Walker::Field>& sections) {
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
}

}  // namespace

std::vector<std::string> parse_config(const std::string& yaml_text, const std::string& source,
                                      Config& c) {
  YAML::Node root;
  try {
    root = load_yaml(yaml_text);
  } catch (const YAML::Exception& e) {
    Walker w(source);
    w.error(e.mark, "(syntax)", e.msg);
    return w.take();
  }
  Walker w(source);
  std::map<std::string, Walker::Field> sections = {
      {"web", [&](const YAML::Node& n, const std::string& p) { parse_web(w, n, p, c.web); }},
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
         w.mapping(n, p, {{"level", w.string(c.log.level)}, {"format", w.string(c.log.format)}});
       }},
      {"probe", [&](const YAML::Node& n,
                    const std::string& p) { probe::parse_probe_options(w, n, p, c.probe); }},
      {"otlp",
       [&](const YAML::Node& n, const std::string& p) { parse_otlp_options(w, n, p, c.otlp); }},
      {"kubernetes",
       [&](const YAML::Node& n, const std::string& p) {
         kubernetes::parse_options(w, n, p, c.kubernetes);
       }},
  };
  add_collector_sections(w, c, sections);
  w.mapping(root, "", sections);
  auto errors = w.take();
  for (auto& e : validate_config(c)) errors.push_back(source + ": " + e);
  return errors;
}

std::vector<std::string> validate_config(const Config& c) {
  std::vector<std::string> errors;
  if (c.web.listen_addresses.empty()) {
    errors.emplace_back("web.listen_address: give at least one address");
  }
  for (std::size_t i = 0; i < c.web.listen_addresses.size(); ++i) {
    const std::string& address = c.web.listen_addresses[i];
    ListenAddress addr;
    if (!parse_listen_address(address, addr)) {
      errors.push_back("web.listen_address: expected host:port, :port or [v6]:port, got \"" +
                       address + "\"");
    } else if (std::find(c.web.listen_addresses.begin(), c.web.listen_addresses.begin() + i,
                         address) != c.web.listen_addresses.begin() + i) {
      errors.push_back("web.listen_address: \"" + address + "\" is given twice");
    }
  }
  if (std::string problem = telemetry_path_problem(c.web.telemetry_path); !problem.empty()) {
    errors.push_back("web.telemetry_path: " + problem);
  }
  if (c.web.read_timeout.count() <= 0) errors.emplace_back("web.read_timeout: must be positive");
  if (c.web.header_timeout.count() <= 0) {
    errors.emplace_back("web.header_timeout: must be positive");
  }
  if (c.web.idle_timeout.count() <= 0) errors.emplace_back("web.idle_timeout: must be positive");
  if (c.web.write_timeout.count() <= 0) errors.emplace_back("web.write_timeout: must be positive");
  if (c.collection.netlink_timeout.count() <= 0) {
    errors.emplace_back("collection.netlink_timeout: must be positive");
  }
  if (c.sysfs.root.empty()) errors.emplace_back("sysfs.root: must not be empty");
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
  if (log::Format f{}; !log::parse_format(c.log.format, f)) {
    errors.push_back("log.format: expected logfmt or json, got \"" + c.log.format + "\"");
  }
  for (auto& e : validate_otlp_options(c.otlp)) errors.push_back(std::move(e));
  for (auto& e : kubernetes::validate_options(c.kubernetes)) errors.push_back(std::move(e));
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

std::string telemetry_path_problem(const std::string& path) {
  if (path.size() < 2 || path.front() != '/') {
    return "expected a path below / such as /metrics, got \"" + path + "\"";
  }
  const bool plain = std::all_of(path.begin(), path.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || std::strchr("/-._~", ch) != nullptr;
  });
  if (!plain) {
    return "only letters, digits and / - . _ ~ may appear in it, got \"" + path + "\"";
  }
  for (const char* taken : {"/healthz", "/-/reload"}) {
    if (path == taken) return "\"" + path + "\" is the path of another endpoint";
  }
  return {};
}

std::string resolve_relative(const std::string& path, const std::string& file) {
  if (path.empty() || path.front() == '/') return path;
  return (std::filesystem::path(file).parent_path() / path).lexically_normal().string();
}

std::vector<std::string> load_config_file(const std::string& path, Config& out) {
  auto text = read_file(path, kMaxConfigFileBytes, path + ": cannot read configuration file");
  if (!text) return {text.error().message};
  auto errors = parse_config(*text, path, out);
  out.web.config_file = resolve_relative(out.web.config_file, path);
  // Paths from the environment are absolute already.
  for (auto* file : {&out.otlp.ca_file, &out.otlp.cert_file, &out.otlp.key_file}) {
    *file = resolve_relative(*file, path);
  }
  return errors;
}

void apply_log_level(const Config& config) {
  log::Level level = log::Level::info;
  log::parse_level(config.log.level, level);
  log::set_level(level);
  log::Format format = log::Format::logfmt;
  log::parse_format(config.log.format, format);
  log::set_format(format);
}

}  // namespace rdma_exporter
