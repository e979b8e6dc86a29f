#pragma once

// A fake /sys written file by file from C++ (sysfs_tree.hpp writes whole
// devices from a spec), for tests that need every value
// of a tree to be their own: a fresh directory under the test's temporary
// directory, removed with the object.
//
//   SysfsFiles sys;
//   sys.file("class/infiniband/mlx5_0/fw_ver", "20.31.1014\n");
//   sysfs::Reader reader(sys.root());

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace rdma_exporter::testing {

class SysfsFiles {
 public:
  SysfsFiles() {
    static int counter = 0;
    root_ = std::filesystem::path(::testing::TempDir()) /
            ("rdma_sysfs_tree_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  ~SysfsFiles() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  SysfsFiles(const SysfsFiles&) = delete;
  SysfsFiles& operator=(const SysfsFiles&) = delete;

  const std::filesystem::path& root() const { return root_; }

  // Writes `text` to <root>/<relative>, making the directories on the way.
  void file(const std::string& relative, const std::string& text) {
    const std::filesystem::path path = root_ / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::trunc);
    out << text;
    if (!out) ADD_FAILURE() << "cannot write " << path;
  }

 private:
  std::filesystem::path root_;
};

}  // namespace rdma_exporter::testing
