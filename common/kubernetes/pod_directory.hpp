#pragma once

// Which pod and container a process belongs to, and which devices each
// container was allocated: the node's CRI and pod-resources answers, kept
// in memory and refreshed on a thread of their own, so a collection only
// looks them up and never waits for a socket.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/kubernetes/node_api.hpp"

namespace rdma_exporter::kubernetes {

struct DirectoryOptions {
  std::string cri_socket;            // empty: no pod names
  std::string pod_resources_socket;  // empty: no device allocations
  std::chrono::milliseconds refresh{std::chrono::seconds(30)};
  std::chrono::milliseconds timeout{std::chrono::seconds(2)};
};

struct PodLabels {
  std::string pod_namespace;
  std::string pod;
  std::string container;  // empty for a process in the pod's own cgroup

  bool operator==(const PodLabels&) const = default;
};

// How each API answered: up (the last call succeeded), calls and failures.
struct ApiHealth {
  bool up = false;
  std::uint64_t calls = 0;
  std::uint64_t failures = 0;
  std::string last_error;
  int last_code = 0;  // the gRPC status code of the last failure
};

class PodDirectory {
 public:
  explicit PodDirectory(DirectoryOptions options);
  ~PodDirectory();
  PodDirectory(const PodDirectory&) = delete;
  PodDirectory& operator=(const PodDirectory&) = delete;

  // Refreshes on a thread every options.refresh, and sooner when a lookup
  // misses (see lookup()); the first refresh is the caller's (refresh()).
  void start();
  void stop();

  // Calls both APIs now, on the caller's thread.
  void refresh();

  // The pod of a process by its cgroup path. nullopt for a path that is no
  // pod's, and for a pod or container the last answer did not list: then
  // one refresh is asked for (once per container or pod, however many
  // lookups miss it), so it shows at a later collection.
  std::optional<PodLabels> lookup(std::string_view cgroup_path);

  const DirectoryOptions& options() const { return options_; }
  std::vector<ContainerDevices> allocations() const;
  std::vector<DeviceAllocation> allocatable() const;
  // Refreshes asked for by lookups that missed.
  std::uint64_t refreshes_asked() const;
  ApiHealth cri_health() const;
  ApiHealth pod_resources_health() const;

 private:
  void run();
  void note(ApiHealth& h, const char* api, const std::string& socket, const Error* e);

  const DirectoryOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool asked_ = false;
  std::thread thread_;

  std::map<std::string, ContainerInfo, std::less<>> containers_;  // by ID
  std::map<std::string, PodLabels, std::less<>> pods_;            // by pod UID
  // Containers (or pods) a refresh was asked for, at most kMaxMissed.
  static constexpr std::size_t kMaxMissed = 1 << 16;
  std::set<std::string, std::less<>> missed_;
  std::uint64_t refreshes_asked_ = 0;
  std::vector<ContainerDevices> allocations_;
  std::vector<DeviceAllocation> allocatable_;
  ApiHealth cri_, pod_resources_;
};

}  // namespace rdma_exporter::kubernetes
