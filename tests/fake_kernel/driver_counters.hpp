#pragma once

// Counter names real drivers report, for the fake kernels and the fake sysfs
// trees (tests/support/sysfs_tree.cpp, hw_counters/) that should look like
// them.

#include <string>
#include <vector>

namespace rdma_exporter::testing {

// mlx5's port counters (drivers/infiniband/hw/mlx5/counters.c).
const std::vector<std::string>& mlx5_port_counters();
// The subset mlx5 also keeps per QP, in a counter set.
const std::vector<std::string>& mlx5_qp_counters();
// Soft-RoCE's port counters (drivers/infiniband/sw/rxe/rxe_hw_counters.c).
const std::vector<std::string>& rxe_port_counters();

}  // namespace rdma_exporter::testing
