#include "exporter/http/collector_filter.hpp"

#include <algorithm>
#include <cerrno>

#include "collectors/registry.hpp"
#include "exporter/http/router.hpp"
#include "exporter/probe_collector.hpp"

namespace rdma_exporter {
namespace {

constexpr std::string_view kCollect = "collect[]";
constexpr std::string_view kExclude = "exclude[]";

// The registry's collectors, then the daemon's own (the probe).
bool is_collector(std::string_view name) {
  return find_collector(name) != nullptr || name == ProbeCollector::kName;
}

std::string collector_names() {
  std::string out;
  for (const CollectorEntry& e : collector_registry()) out += e.name + ", ";
  return out + std::string(ProbeCollector::kName);
}

std::string_view parameter_of(const CollectorFilter& filter) {
  return filter.mode == CollectorFilter::Mode::only ? kCollect : kExclude;
}

}  // namespace

Result<CollectorFilter> parse_collector_filter(std::string_view target) {
  CollectorFilter filter;
  if (target.find('?') == std::string_view::npos) return filter;
  auto params = query_parameters(target);
  if (!params) return params.error();
  bool collect = false;
  bool exclude = false;
  for (auto& [key, value] : *params) {
    if (key != kCollect && key != kExclude) continue;  // other parameters are ignored
    (key == kCollect ? collect : exclude) = true;
    if (!is_collector(value)) {
      return Error{EINVAL, "unknown collector \"" + value + "\" in " + key +
                               " (collectors: " + collector_names() + ")"};
    }
    filter.names.insert(std::move(value));
  }
  if (collect && exclude) {
    return Error{EINVAL, "collect[] and exclude[] cannot be used in one request"};
  }
  if (collect) filter.mode = CollectorFilter::Mode::only;
  if (exclude) filter.mode = CollectorFilter::Mode::except;
  return filter;
}

Result<std::shared_ptr<Snapshot>> apply_collector_filter(const CollectorFilter& filter,
                                                         const Snapshot& snapshot) {
  for (const auto& name : filter.names) {
    const bool enabled = std::any_of(snapshot.outcomes.begin(), snapshot.outcomes.end(),
                                     [&](const CollectorOutcome& o) { return o.name == name; });
    if (!enabled) {
      return Error{EINVAL, "collector \"" + name + "\" in " + std::string(parameter_of(filter)) +
                               " is not enabled"};
    }
  }
  std::set<std::string, std::less<>> chosen;
  for (const auto& o : snapshot.outcomes) {
    if (filter.mode != CollectorFilter::Mode::only ? !filter.names.contains(o.name)
                                                   : filter.names.contains(o.name)) {
      chosen.insert(o.name);
    }
  }
  return snapshot.only(chosen);
}

}  // namespace rdma_exporter
