#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/yaml_walker.hpp"

namespace rdma_exporter {

// Configuration of optional (dynamic) port counters (the
// `optional_counters` section). Without port rules that enable counters the
// exporter only reports which are enabled.
struct OptionalCountersOptions {
  // The first rule that matches a port applies.
  struct PortRule {
    std::string device = ".*";  // regular expression, whole device name
    uint32_t port = 0;          // 0: every port
    // Optional counters to keep enabled ("cc_rx_ce_pkts", ...).
    std::vector<std::string> enable;
    // true: the enabled set is exactly `enable` (others are disabled);
    // false: `enable` is added to whatever is enabled already.
    bool own = false;

    // The rule asks for kernel writes.
    bool writes() const { return own || !enable.empty(); }
  };

  static constexpr const char* kCollector = "optional_counters";

  std::vector<PortRule> ports;
  std::chrono::milliseconds reconcile_interval{std::chrono::seconds(10)};

  // Some rule asks for kernel writes (CAP_NET_ADMIN).
  bool writes() const;
};

// The `optional_counters` section, one message per problem.
void parse_optional_counters_options(Walker& w, const YAML::Node& node, const std::string& path,
                                     OptionalCountersOptions& out);
std::vector<std::string> validate_optional_counters_options(const OptionalCountersOptions& o);

}  // namespace rdma_exporter
