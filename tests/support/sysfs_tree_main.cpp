// sysfs_tree OUT KIND[:COUNT[:PORTS]] [KIND...]: writes a fake sysfs tree
// (tests/support/sysfs_tree.hpp) below OUT/class/infiniband, replacing OUT,
// for the integration tests and the benchmarks.
//   e.g. sysfs_tree /tmp/sys mlx5:8:2   (eight 2-port mlx5 devices)

#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/sysfs_tree.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: sysfs_tree OUT KIND[:COUNT[:PORTS]] [KIND...]\n"
                 "  KIND: mlx5, rxe, efa or broken; e.g. sysfs_tree /tmp/sys mlx5:8:2\n";
    return 2;
  }
  try {
    rdma_exporter::testing::write_sysfs_tree(argv[1],
                                             std::vector<std::string>(argv + 2, argv + argc));
  } catch (const std::invalid_argument& e) {
    std::cerr << "sysfs_tree: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "sysfs_tree: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
