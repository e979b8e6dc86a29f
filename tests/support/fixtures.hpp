#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <exception>
#include <string>

#include "tests/support/sysfs_tree.hpp"

namespace rdma_exporter::testing {

// Writes a fake sysfs tree (tests/support/sysfs_tree.hpp) in a directory of
// its own under the test's temporary directory, e.g.
// make_sysfs_fixture("mlx5:1:2 rxe broken"), and returns its root.
inline std::string make_sysfs_fixture(const std::string& specs) {
  static int counter = 0;
  const std::string root = ::testing::TempDir() + "rdma_sysfs_" + std::to_string(::getpid()) + "_" +
                           std::to_string(counter++);
  try {
    write_sysfs_tree(root, specs);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "fixture generation failed for \"" << specs << "\": " << e.what();
  }
  return root;
}

}  // namespace rdma_exporter::testing
