#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>

namespace rdma_exporter {

// What /proc says about a process: its name and cgroup. The pids come from
// rdma netlink, which reports them in the reader's pid namespace: the
// exporter needs the host pid namespace to see other containers' processes.
//
// On a host with thousands of processes holding QPs, reading two /proc files
// per pid on every collection would cost more than the rest of the
// collection, so what was read is kept across collections, under two rules:
// - a pid that was not asked about during a whole collection is forgotten,
//   so a pid reused by a new process is read afresh (its QPs appear in a
//   later collection than the old process's disappeared);
// - an entry is read again after at most kMaxAge (staggered by pid, so the
//   re-reads spread over time), which bounds how long a name changed by
//   exec or prctl while the process keeps its QPs stays stale.
class ProcessInfo {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr Clock::duration kMaxAge = std::chrono::minutes(5);

  explicit ProcessInfo(std::filesystem::path proc_root) : root_(std::move(proc_root)) {}

  // Empty when the process is gone (or not visible).
  std::optional<std::string> comm(uint32_t pid);
  // The cgroup v2 path ("0::/path"), or the first v1 hierarchy's path.
  std::optional<std::string> cgroup(uint32_t pid);

  // Starts a collection at `now`: forgets the pids not asked about since the
  // previous call and the entries past their age.
  void next_collection(Clock::time_point now);

  // Pids currently remembered.
  std::size_t size() const { return cache_.size(); }

 private:
  struct Entry {
    bool comm_read = false;
    std::optional<std::string> comm;
    bool cgroup_read = false;
    std::optional<std::string> cgroup;
    Clock::time_point expires;
    bool used = true;
  };
  Entry& entry(uint32_t pid);

  std::filesystem::path root_;
  std::unordered_map<uint32_t, Entry> cache_;
  Clock::time_point now_{};
};

}  // namespace rdma_exporter
