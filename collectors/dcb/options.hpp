#pragma once

namespace rdma_exporter {

// The `dcb` section.
struct DcbOptions {
  // Export the DSCP-to-priority map of the APP table
  // (rdma_netdev_dscp_priority{dscp}): up to 64 series per netdev.
  bool dscp_priority = false;
};

}  // namespace rdma_exporter
