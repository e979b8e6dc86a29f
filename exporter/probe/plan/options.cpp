#include "exporter/probe/plan/options.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "common/address.hpp"
#include "common/duration.hpp"
#include "common/pattern.hpp"
#include "common/yaml_walker.hpp"
#include "exporter/probe/plan/targets.hpp"
#include "exporter/probe/wire/datagram.hpp"
#include "exporter/probe/wire/protocol.hpp"

namespace rdma_exporter::probe {

std::vector<ProbeClass> effective_classes(const ProbeOptions& options) {
  if (!options.classes.empty()) return options.classes;
  ProbeClass c;
  c.name = "default";
  c.op = Op::ud;
  return {c};
}

namespace {

void positive(std::vector<std::string>& errors, std::chrono::milliseconds d,
              const std::string& key) {
  if (d.count() <= 0) errors.push_back(key + ": must be positive");
}

void rail_problem(std::vector<std::string>& errors, const std::string& rail,
                  const std::string& key) {
  if (rail.empty() || rail.size() > wire::kMaxNameSize ||
      !std::all_of(rail.begin(), rail.end(), [](char c) { return c >= 0x20 && c < 0x7f; })) {
    errors.push_back(key + ": a rail is 1 to " + std::to_string(wire::kMaxNameSize) +
                     " printable ASCII characters");
  }
}

// The listen address, the time limits and the backoff.
void validate_general(const ProbeOptions& o, std::vector<std::string>& errors) {
  ListenAddress listen;
  if (!parse_listen_address(o.listen_address, listen)) {
    errors.push_back("probe.listen_address: expected host:port, :port or [v6]:port, got \"" +
                     o.listen_address + "\"");
  }
  positive(errors, o.connect_timeout, "probe.connect_timeout");
  positive(errors, o.backoff_initial, "probe.backoff_initial");
  positive(errors, o.file_sd_refresh, "probe.file_sd_refresh");
  positive(errors, o.responder.idle_timeout, "probe.idle_timeout");
  positive(errors, o.responder.handshake_timeout, "probe.handshake_timeout");
  positive(errors, o.responder.ud_min_interval, "probe.ud_min_interval");
  positive(errors, o.discovery_interval, "probe.discovery_interval");
  if (o.backoff_max < o.backoff_initial) {
    errors.emplace_back("probe.backoff_max: must not be below probe.backoff_initial");
  }
}

// probe.device, and probe.rails' ports and names.
void validate_devices(const ProbeOptions& o, std::vector<std::string>& errors) {
  if (std::string problem = pattern_limit_problem(o.device); !problem.empty()) {
    errors.push_back("probe.device: " + problem);
  } else if (auto device = Pattern::compile(o.device); !device) {
    errors.push_back("probe.device: not a regular expression: " + device.error().message);
  }
  for (const auto& [port, rail] : o.rails) {
    rail_problem(errors, rail, "probe.rails." + port);
    // "device" or "device/port", port 1 to 255.
    const auto slash = port.find('/');
    int number = 0;
    const char* end = port.data() + port.size();
    if (port.empty() || slash == 0 ||
        (slash != std::string::npos &&
         (std::from_chars(port.data() + slash + 1, end, number).ptr != end || number < 1 ||
          number > 255))) {
      errors.push_back("probe.rails." + port + ": expected a device name or device/port");
    }
  }
}

// The classes; returns their names.
std::set<std::string> validate_classes(const ProbeOptions& o, std::vector<std::string>& errors) {
  std::set<std::string> names;
  std::set<std::tuple<Op, uint32_t, uint8_t>> kinds;
  for (std::size_t i = 0; i < o.classes.size(); ++i) {
    const ProbeClass& c = o.classes[i];
    const std::string key = "probe.classes[" + std::to_string(i) + "]";
    if (c.name.empty()) errors.push_back(key + ".name: every class needs a name");
    if (!c.name.empty() && !names.insert(c.name).second) {
      errors.push_back(key + ".name: \"" + c.name + "\" is used twice");
    }
    if (!kinds.insert({c.op, c.size, c.tclass}).second) {
      errors.push_back(key +
                       ": another class has the same op, size and tclass (their series "
                       "would be one)");
    }
    if (!wire::mtu_valid(c.mtu)) {
      errors.push_back(key + ".mtu: expected 256, 512, 1024, 2048 or 4096");
    }
    if (c.size > o.responder.max_message_size) {
      errors.push_back(key + ".size: above probe.max_message_size (" +
                       std::to_string(o.responder.max_message_size) + ")");
    }
    positive(errors, c.interval, key + ".interval");
    positive(errors, c.timeout, key + ".timeout");
    if (is_ud(c.op) && (c.size < wire::kDatagramSize || c.size > c.mtu)) {
      errors.push_back(key + ".size: a ud probe is " + std::to_string(wire::kDatagramSize) +
                       " bytes up to its mtu (" + std::to_string(c.mtu) + ")");
    }
    if (c.flows < 1 || c.flows > 16) errors.push_back(key + ".flows: expected 1 to 16");
  }
  return names;
}

// The targets, each naming classes among `names`, and the file_sd files.
void validate_targets(const ProbeOptions& o, const std::set<std::string>& names,
                      std::vector<std::string>& errors) {
  for (std::size_t i = 0; i < o.targets.size(); ++i) {
    const Target& t = o.targets[i];
    const std::string key = "probe.targets[" + std::to_string(i) + "]";
    if (!valid_target_address(t.address)) {
      errors.push_back(key + ".address: expected host:port, got \"" + t.address + "\"");
    }
    for (const auto& c : t.classes) {
      if (!names.contains(c)) errors.push_back(key + ".classes: no class named \"" + c + "\"");
    }
    if (!t.rail.empty()) rail_problem(errors, t.rail, key + ".rail");
  }
  for (const auto& f : o.file_sd) {
    if (f.empty()) errors.emplace_back("probe.file_sd: a path is empty");
  }
}

}  // namespace

std::vector<std::string> validate_probe_options(const ProbeOptions& o) {
  std::vector<std::string> errors;
  validate_general(o, errors);
  validate_devices(o, errors);
  const std::set<std::string> names = validate_classes(o, errors);
  positive(errors, o.pinglist.epoch, "probe.pinglist.epoch");
  if (std::string p = target_label_problem(o.pinglist.group_label); !p.empty()) {
    errors.push_back("probe.pinglist.group_label: " + p);
  }
  if (o.histograms != "group" && o.histograms != "target") {
    errors.emplace_back("probe.histograms: expected group or target");
  }
  if (o.pair_series != "all" && o.pair_series != "failing") {
    errors.emplace_back("probe.pair_series: expected all or failing");
  }
  validate_targets(o, names, errors);
  return errors;
}

namespace {

// A duration written as microseconds ("50us") or as any other duration.
Walker::Field microseconds_field(Walker& w, std::chrono::microseconds& out) {
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
}

// One entry of probe.classes.
void parse_probe_class(Walker& w, const YAML::Node& n, const std::string& p, ProbeClass& c) {
  std::string op = "write";
  w.mapping(n, p,
            {{"name", w.string(c.name)},
             {"op", w.optional_string_into(op,
                                           [](const std::string& v) {
                                             return find_op(v) != nullptr
                                                        ? std::string()
                                                        : "expected one of " + op_names() +
                                                              ", got \"" + v + "\"";
                                           })},
             {"size", w.integer(c.size, 1, 1 << 30)},
             {"tclass", w.integer(c.tclass, 0, 255)},
             {"sl", w.integer(c.sl, 0, 15)},
             {"port", w.integer(c.port, 1, 255)},
             {"gid_index", w.integer(c.gid_index, -1, 65535)},
             {"mtu", w.integer(c.mtu, 256, 4096)},
             {"interval", w.duration(c.interval)},
             {"timeout", w.duration(c.timeout)},
             {"busy_poll", microseconds_field(w, c.busy_poll)},
             {"flows", w.integer(c.flows, 1, 16)}});
  if (const OpRow* row = find_op(op)) c.op = row->op;
}

// One entry of probe.targets.
void parse_target(Walker& w, const YAML::Node& n, const std::string& p, Target& t) {
  w.mapping(n, p,
            {{"address", w.string(t.address)},
             {"labels",
              [&w, &t](const YAML::Node& v, const std::string& key) {
                if (v.IsNull()) return;
                if (!v.IsMap()) return w.error_at(v, key, "expected a mapping of names to strings");
                for (const auto& kv : v) {
                  const std::string name = kv.first.Scalar();
                  if (!kv.second.IsScalar()) {
                    w.error_at(kv.second, key + "." + name, "expected a string");
                  } else if (std::string problem = target_label_problem(name); !problem.empty()) {
                    w.error_at(kv.first, key + "." + name, problem);
                  } else {
                    t.labels[name] = kv.second.Scalar();
                  }
                }
              }},
             {"classes", w.string_list(t.classes)},
             {"rail", w.string(t.rail)}});
}

// probe.rails: device or device/port to a rail name, checked later by
// validate_probe_options.
Walker::Field rails_field(Walker& w, std::map<std::string, std::string>& rails) {
  return [&w, &rails](const YAML::Node& v, const std::string& key) {
    if (v.IsNull()) return;
    if (!v.IsMap()) {
      return w.error_at(v, key, "expected a mapping of device or device/port to a rail");
    }
    for (const auto& kv : v) {
      if (!kv.second.IsScalar()) {
        w.error_at(kv.second, key + "." + kv.first.Scalar(), "expected a string");
      } else {
        rails[kv.first.Scalar()] = kv.second.Scalar();
      }
    }
  };
}

}  // namespace

void parse_probe_options(Walker& w, const YAML::Node& node, const std::string& path,
                         ProbeOptions& o) {
  auto probe_class = [&w](const YAML::Node& n, const std::string& p, ProbeClass& c) {
    parse_probe_class(w, n, p, c);
  };
  auto target = [&w](const YAML::Node& n, const std::string& p, Target& t) {
    parse_target(w, n, p, t);
  };
  w.mapping(node, path,
            {{"enabled", w.boolean(o.enabled)},
             {"device", w.string(o.device)},
             {"port", w.integer(o.port, 1, 255)},
             {"link_layer", w.optional_string_into(o.link_layer,
                                                   [](const std::string& v) {
                                                     return one_of(v, {"ethernet", "infiniband"});
                                                   })},
             {"rails", rails_field(w, o.rails)},
             {"cross_rail", w.boolean(o.cross_rail)},
             {"discovery_interval", w.duration(o.discovery_interval)},
             {"gid_index", w.integer(o.gid_index, -1, 65535)},
             {"listen_address", w.string(o.listen_address)},
             {"classes", w.list_of<ProbeClass>(o.classes, probe_class)},
             {"targets", w.list_of<Target>(o.targets, target)},
             {"file_sd", w.string_list(o.file_sd)},
             {"file_sd_refresh", w.duration(o.file_sd_refresh)},
             {"pinglist",
              [&](const YAML::Node& v, const std::string& key) {
                w.mapping(v, key,
                          {{"group_label", w.string(o.pinglist.group_label)},
                           {"remote_per_rail", w.integer(o.pinglist.remote_per_rail, 0, 1024)},
                           {"epoch", w.duration(o.pinglist.epoch)},
                           {"group", w.string(o.pinglist.group)}});
              }},
             {"histograms", w.optional_string_into(o.histograms,
                                                   [](const std::string& v) {
                                                     return one_of(v, {"group", "target"});
                                                   })},
             {"pair_series", w.optional_string_into(o.pair_series,
                                                    [](const std::string& v) {
                                                      return one_of(v, {"all", "failing"});
                                                    })},
             {"loopback", w.boolean(o.loopback)},
             {"connect_timeout", w.duration(o.connect_timeout)},
             {"backoff_initial", w.duration(o.backoff_initial)},
             {"backoff_max", w.duration(o.backoff_max)},
             {"secret_file", w.string(o.secret_file)},
             {"secret_grace", w.duration(o.secret_grace)},
             {"max_sessions", w.integer(o.responder.max_sessions, 1, 65536)},
             {"max_sessions_per_source", w.integer(o.responder.max_sessions_per_source, 1, 65536)},
             {"setups_per_minute_per_source",
              w.integer(o.responder.setups_per_minute_per_source, 1, 1000000)},
             {"max_message_size", w.integer(o.responder.max_message_size, 1, 1 << 30)},
             {"max_pinned_bytes", w.integer(o.responder.max_pinned_bytes, 1 << 20, 1LL << 40)},
             {"ud_min_interval", w.duration(o.responder.ud_min_interval)},
             {"idle_timeout", w.duration(o.responder.idle_timeout)},
             {"handshake_timeout", w.duration(o.responder.handshake_timeout)},
             {"memory", w.optional_string_into(o.memory, [](const std::string& v) {
                return one_of(v, {"host", "udmabuf"});
              })}});
}

}  // namespace rdma_exporter::probe
