#include "common/kubernetes/pod_directory.hpp"

#include "common/kubernetes/cgroup_path.hpp"
#include "common/log.hpp"

namespace rdma_exporter::kubernetes {

PodDirectory::PodDirectory(DirectoryOptions options) : options_(std::move(options)) {}

PodDirectory::~PodDirectory() {
  stop();
}

void PodDirectory::start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = false;
  }
  thread_ = std::thread([this] { run(); });
}

void PodDirectory::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PodDirectory::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  // start() comes after a first refresh(): wait, then refresh.
  while (!stopping_) {
    wake_.wait_for(lock, options_.refresh, [this] { return stopping_ || asked_; });
    asked_ = false;
    if (stopping_) break;
    lock.unlock();
    refresh();
    lock.lock();
  }
}

void PodDirectory::note(ApiHealth& h, const char* api, const std::string& socket, const Error* e) {
  ++h.calls;
  if (e == nullptr) {
    if (!h.up && h.failures > 0)
      log::info("kubernetes: answering again", {{"api", api}, {"socket", socket}});
    h.up = true;
    h.last_error.clear();
    return;
  }
  ++h.failures;
  // Logged when it starts failing, and when the kind of failure (the gRPC
  // status) changes: the detail of one kind varies from call to call (the
  // last connection error), which is no news.
  if (h.up || h.calls == 1 || h.last_code != e->code) {
    log::warn("kubernetes: not answering; its labels are left out",
              {{"api", api}, {"socket", socket}, {"err", e->message}});
  }
  h.up = false;
  h.last_error = e->message;
  h.last_code = e->code;
}

void PodDirectory::refresh() {
  if (!options_.cri_socket.empty()) {
    auto listed = list_containers(options_.cri_socket, options_.timeout);
    std::lock_guard<std::mutex> lock(mutex_);
    note(cri_, "cri", options_.cri_socket, listed ? nullptr : &listed.error());
    if (listed) {
      containers_.clear();
      pods_.clear();
      for (auto& c : *listed) {
        pods_[c.pod_uid] = PodLabels{c.pod_namespace, c.pod_name, {}};
        const std::string id = c.id;
        containers_[id] = std::move(c);
      }
    }
  }
  if (!options_.pod_resources_socket.empty()) {
    auto listed = list_pod_devices(options_.pod_resources_socket, options_.timeout);
    auto all = listed ? allocatable_devices(options_.pod_resources_socket, options_.timeout)
                      : Result<std::vector<DeviceAllocation>>(listed.error());
    std::lock_guard<std::mutex> lock(mutex_);
    const Error* e = !listed ? &listed.error() : !all ? &all.error() : nullptr;
    note(pod_resources_, "pod_resources", options_.pod_resources_socket, e);
    if (e == nullptr) {
      allocations_ = std::move(*listed);
      allocatable_ = std::move(*all);
    }
  }
}

std::optional<PodLabels> PodDirectory::lookup(std::string_view cgroup_path) {
  const auto pod = parse_pod_cgroup(cgroup_path);
  if (!pod) return std::nullopt;
  std::unique_lock<std::mutex> lock(mutex_);
  if (!pod->container_id.empty()) {
    if (const auto c = containers_.find(pod->container_id); c != containers_.end()) {
      return PodLabels{c->second.pod_namespace, c->second.pod_name, c->second.name};
    }
  } else if (const auto p = pods_.find(pod->pod_uid); p != pods_.end()) {
    return p->second;
  }
  // Unknown: ask for one refresh per container (or pod) until one lists it.
  const std::string& key = pod->container_id.empty() ? pod->pod_uid : pod->container_id;
  if (options_.cri_socket.empty()) return std::nullopt;
  // Bounded: past the cap, every unknown container may ask once more.
  if (missed_.size() >= kMaxMissed) missed_.clear();
  if (missed_.insert(key).second) {
    asked_ = true;
    ++refreshes_asked_;
    lock.unlock();
    wake_.notify_all();
  }
  return std::nullopt;
}

std::vector<ContainerDevices> PodDirectory::allocations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocations_;
}

std::vector<DeviceAllocation> PodDirectory::allocatable() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocatable_;
}

std::uint64_t PodDirectory::refreshes_asked() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return refreshes_asked_;
}

ApiHealth PodDirectory::cri_health() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cri_;
}

ApiHealth PodDirectory::pod_resources_health() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pod_resources_;
}

}  // namespace rdma_exporter::kubernetes
