#pragma once

// Counter names real drivers report, for fake kernels that should look like
// them (the same names tests/fixtures/sysfs_tree.py writes to hw_counters/).

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
