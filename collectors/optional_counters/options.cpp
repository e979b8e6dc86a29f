#include "collectors/optional_counters/options.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include "collectors/device_filter.hpp"

namespace rdma_exporter {
namespace {

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

}  // namespace

void parse_optional_counters_options(Walker& w, const YAML::Node& node, const std::string& path,
                                     OptionalCountersOptions& o) {
  using PortRule = OptionalCountersOptions::PortRule;
  auto port_rule = [&w](const YAML::Node& n, const std::string& p, PortRule& r) {
    w.mapping(n, p,
              {{"device", w.optional_string_into(r.device, device_pattern_problem)},
               {"port", w.integer(r.port, 0, 65535)},
               {"enable", w.string_list(r.enable, counter_name_problem)},
               {"own", w.boolean(r.own)}});
  };
  w.mapping(node, path,
            {{"ports", w.list_of<PortRule>(o.ports, port_rule)},
             {"reconcile_interval", w.duration(o.reconcile_interval)}});
}

std::vector<std::string> validate_optional_counters_options(const OptionalCountersOptions& o) {
  std::vector<std::string> errors;
  if (o.reconcile_interval.count() <= 0) {
    errors.emplace_back("optional_counters.reconcile_interval: must be positive");
  }
  return errors;
}

bool OptionalCountersOptions::writes() const {
  return std::any_of(ports.begin(), ports.end(), [](const auto& r) { return r.writes(); });
}

}  // namespace rdma_exporter
