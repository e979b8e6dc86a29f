#pragma once

// Fake /sys trees shaped like the kernel's /sys/class/infiniband, for the unit
// tests (directly), the integration tests and the benchmarks (through the
// sysfs_tree tool, tests/support/sysfs_tree_main.cpp).
//
// Kinds of device:
//   mlx5    InfiniBand HCA: info files, IB PMA counters/ and port hw_counters/;
//           its PCI function 0000:<0x10 + N>:00.0 (<out>/devices/pci0000:00/)
//           trained to 16.0 GT/s x8 of 32.0 GT/s x16, with AER files whose
//           counts are sysfs_counter_value(N, S, error name) for the 1st,
//           3rd, ... error of each file and 0 for the others, S 1 for
//           correctable, 2 nonfatal, 3 fatal (TOTAL_ERR_* lines as the 1st)
//   rxe     Soft-RoCE: no counters/ directory, hw_counters/ with "lifespan"
//   efa     device-level hw_counters/ (what netlink cannot reach)
//   broken  files that fail the ways real sysfs files fail, its PCI
//           function's too
//
// A spec is KIND[:COUNT[:PORTS]], COUNT and PORTS 1 when left out: "mlx5:8:2"
// is eight 2-port mlx5 devices, mlx5_0 to mlx5_7.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace rdma_exporter::testing {

// Writes the devices of `specs` below out/class/infiniband; `out` is
// replaced. Throws std::invalid_argument for a malformed spec or an unknown
// kind (before touching `out`), std::runtime_error or
// std::filesystem::filesystem_error when a file cannot be written.
void write_sysfs_tree(const std::filesystem::path& out, const std::vector<std::string>& specs);

// The same with the specs in one string, separated by spaces:
// "mlx5:1:2 rxe broken".
void write_sysfs_tree(const std::filesystem::path& out, std::string_view specs);

// What the tree writes into counter file `name` of device `device` (the N of
// mlx5_N, rxeN, efa_N) and port `port` (0 for efa's device-level counters):
// (sum of the name's bytes * 1000 + device * 100 + port * 10) mod 2^32, so
// that a test can tell any two counters apart. hw_counters/lifespan, a
// setting rather than a counter, always holds 10.
uint64_t sysfs_counter_value(int device, int port, std::string_view name);

}  // namespace rdma_exporter::testing
