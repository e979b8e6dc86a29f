#pragma once

#include <string>

#include "common/yaml_walker.hpp"

namespace rdma_exporter {

// The `dcb` section.
struct DcbOptions {
  static constexpr const char* kCollector = "dcb";

  // Export the DSCP-to-priority map of the APP table
  // (rdma_netdev_dscp_priority{dscp}): up to 64 series per netdev.
  bool dscp_priority = false;
};

// The `dcb` section.
inline void parse_dcb_options(Walker& w, const YAML::Node& node, const std::string& path,
                              DcbOptions& out) {
  w.mapping(node, path, {{"dscp_priority", w.boolean(out.dscp_priority)}});
}

}  // namespace rdma_exporter
