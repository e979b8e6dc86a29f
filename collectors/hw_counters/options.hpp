#pragma once

#include <string>

#include "common/yaml_walker.hpp"

namespace rdma_exporter {

// The `hw_counters` section.
struct HwCountersOptions {
  static constexpr const char* kCollector = "hw_counters";

  // Where port hw counters are read.
  enum class Source {
    // rdma netlink; a port whose counters netlink cannot give (no rdma
    // netlink, STAT_GET failing for the port) is read from sysfs.
    automatic,
    netlink,  // rdma netlink only
    sysfs,    // sysfs only (ports/<n>/hw_counters/)
  };
  Source source = Source::automatic;
};

// The `hw_counters` section, one message per problem.
inline void parse_hw_counters_options(Walker& w, const YAML::Node& node, const std::string& path,
                                      HwCountersOptions& out) {
  w.mapping(
      node, path,
      {{"source", [&w, &out](const YAML::Node& n, const std::string& key) {
          if (!n.IsScalar()) return w.error_at(n, key, "expected a string");
          const std::string& v = n.Scalar();
          if (std::string problem = one_of(v, {"auto", "netlink", "sysfs"}); !problem.empty()) {
            return w.error_at(n, key, problem);
          }
          out.source = v == "netlink" ? HwCountersOptions::Source::netlink
                       : v == "sysfs" ? HwCountersOptions::Source::sysfs
                                      : HwCountersOptions::Source::automatic;
        }}});
}

}  // namespace rdma_exporter
