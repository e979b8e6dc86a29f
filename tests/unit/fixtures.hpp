#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace rdma_exporter::testing {

// Builds a fake sysfs tree with tests/fixtures/sysfs_tree.py, e.g.
// make_sysfs_fixture("mlx5:1:2 rxe broken"), and returns its root.
inline std::string make_sysfs_fixture(const std::string& specs) {
  static int counter = 0;
  const std::string root = ::testing::TempDir() + "rdma_sysfs_" + std::to_string(::getpid()) + "_" +
                           std::to_string(counter++);
  const std::string cmd =
      "python3 " RDMA_EXPORTER_SOURCE_DIR "/tests/fixtures/sysfs_tree.py " + root + " " + specs;
  if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "fixture generation failed: " << cmd;
  return root;
}

}  // namespace rdma_exporter::testing
