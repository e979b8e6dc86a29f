#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>

namespace rdma_exporter {

// What /proc says about a process: its name and cgroup. The pids come from
// rdma netlink, which reports them in the reader's pid namespace: the
// exporter needs the host pid namespace to see other containers' processes.
class ProcessInfo {
 public:
  explicit ProcessInfo(std::filesystem::path proc_root) : root_(std::move(proc_root)) {}

  // Empty when the process is gone (or not visible).
  std::optional<std::string> comm(uint32_t pid);
  // The cgroup v2 path ("0::/path"), or the first v1 hierarchy's path.
  std::optional<std::string> cgroup(uint32_t pid);

  // Forgets everything; called once per collection, since pids are reused.
  void clear() { cache_.clear(); }

 private:
  struct Entry {
    bool comm_read = false;
    std::optional<std::string> comm;
    bool cgroup_read = false;
    std::optional<std::string> cgroup;
  };
  std::filesystem::path root_;
  std::unordered_map<uint32_t, Entry> cache_;
};

}  // namespace rdma_exporter
