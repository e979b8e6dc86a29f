#include "collectors/probe/options.hpp"

#include <set>
#include <tuple>

#include "collectors/probe/protocol.hpp"
#include "collectors/probe/targets.hpp"
#include "common/address.hpp"

namespace rdma_exporter::probe {

std::vector<ProbeClass> effective_classes(const ProbeOptions& options) {
  if (!options.classes.empty()) return options.classes;
  ProbeClass c;
  c.name = "default";
  return {c};
}

std::vector<std::string> validate_probe_options(const ProbeOptions& o) {
  std::vector<std::string> errors;
  auto positive = [&](std::chrono::milliseconds d, const std::string& key) {
    if (d.count() <= 0) errors.push_back(key + ": must be positive");
  };
  ListenAddress listen;
  if (!parse_listen_address(o.listen_address, listen)) {
    errors.push_back("probe.listen_address: expected host:port, :port or [v6]:port, got \"" +
                     o.listen_address + "\"");
  }
  positive(o.connect_timeout, "probe.connect_timeout");
  positive(o.backoff_initial, "probe.backoff_initial");
  positive(o.file_sd_refresh, "probe.file_sd_refresh");
  positive(o.idle_timeout, "probe.idle_timeout");
  if (o.backoff_max < o.backoff_initial) {
    errors.push_back("probe.backoff_max: must not be below probe.backoff_initial");
  }
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
    if (c.size > o.max_message_size) {
      errors.push_back(key + ".size: above probe.max_message_size (" +
                       std::to_string(o.max_message_size) + ")");
    }
    positive(c.interval, key + ".interval");
    positive(c.timeout, key + ".timeout");
  }
  for (std::size_t i = 0; i < o.targets.size(); ++i) {
    const Target& t = o.targets[i];
    const std::string key = "probe.targets[" + std::to_string(i) + "]";
    if (!valid_target_address(t.address)) {
      errors.push_back(key + ".address: expected host:port, got \"" + t.address + "\"");
    }
    for (const auto& c : t.classes) {
      if (!names.contains(c)) errors.push_back(key + ".classes: no class named \"" + c + "\"");
    }
  }
  for (const auto& f : o.file_sd) {
    if (f.empty()) errors.push_back("probe.file_sd: a path is empty");
  }
  return errors;
}

}  // namespace rdma_exporter::probe
