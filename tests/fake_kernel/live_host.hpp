#pragma once

// The hosts fake_rdma_host serves and bench/fleet_hosts renders: the fake
// kernel interfaces (nldev, DCB, ethtool, ethtool netlink, modules) of a
// host, with time passing: every collection moves traffic through its QPs,
// ports and netdevs.

#include <cstdint>

#include "common/kernel/interfaces.hpp"

namespace rdma_exporter::testing {

// The mixed host: a dual-port RoCE mlx5 in auto mode by QP type and process,
// a dual-port InfiniBand mlx5 with one port down, a Soft-RoCE device; QPs of
// pids 100, 101, 200 and 300 (their comm and cgroup come from the proc
// directory). Its sysfs tree is the tests' "mlx5:2:2 rxe".
KernelInterfaces mixed_host_kernel();

// A rail host: `rnics` single-port mlx5 RoCE devices mlx5_0.. (a sysfs tree of
// "mlx5:N:1"), netdevs ens<i>np0 on 400G links with PFC on priority 3,
// statistics for 8 priorities, RS-FEC on 8 lanes and a QSFP-DD module; in
// auto mode by QP type and process, a GSI QP on each port and `processes`
// processes (pids 1000 on) with an RC QP on every port.
KernelInterfaces rail_host_kernel(uint32_t rnics, uint32_t processes);

}  // namespace rdma_exporter::testing
