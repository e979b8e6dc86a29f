#pragma once

// A container runtime's CRI and a kubelet's pod-resources API as a node
// serves them: real gRPC servers on unix sockets, from the same .proto
// files as the exporter's client, answering what a test sets. For the
// sockets that are not servers at all: a path that refuses and one that
// answers garbage.

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace grpc {
class Server;
}

namespace rdma_exporter::testing {

struct FakeContainer {
  std::string id;
  std::map<std::string, std::string> labels;
  std::string name;  // ContainerMetadata.name
};

struct FakeDevices {
  std::string resource;
  std::vector<std::string> ids;
};

struct FakeContainerResources {
  std::string name;
  std::vector<FakeDevices> devices;
};

struct FakePod {
  std::string name;
  std::string pod_namespace;
  std::vector<FakeContainerResources> containers;
};

// What the fake servers answer; a test changes it between calls.
struct NodeState {
  std::vector<FakeContainer> containers;
  std::vector<FakePod> pods;
  std::vector<FakeDevices> allocatable;
  // Every call waits this long before it answers (a hung server).
  std::chrono::milliseconds delay{0};
  // Every call fails with this gRPC status code when not 0.
  int fail_code = 0;
};

class FakeNodeApi {
 public:
  // Serves CRI on `cri_socket` and pod-resources on `pod_resources_socket`
  // (either may be empty: not served).
  FakeNodeApi(const std::string& cri_socket, const std::string& pod_resources_socket);
  ~FakeNodeApi();
  FakeNodeApi(const FakeNodeApi&) = delete;
  FakeNodeApi& operator=(const FakeNodeApi&) = delete;

  void set(NodeState s);
  // Calls answered so far: ListContainers, List, GetAllocatableResources.
  int list_containers_calls() const { return cri_calls_; }
  int list_calls() const { return list_calls_; }
  int allocatable_calls() const { return allocatable_calls_; }

  struct Services;

 private:
  std::unique_ptr<Services> services_;
  std::unique_ptr<grpc::Server> cri_;
  std::unique_ptr<grpc::Server> pod_resources_;
  std::atomic<int> cri_calls_{0}, list_calls_{0}, allocatable_calls_{0};
};

// A unix socket path whose file exists with nobody listening: connecting
// is refused.
void make_refusing_socket(const std::string& path);

// Listens on a unix socket and answers every connection with `bytes`, then
// closes it, until destroyed.
class GarbageServer {
 public:
  GarbageServer(const std::string& path, std::string bytes);
  ~GarbageServer();
  GarbageServer(const GarbageServer&) = delete;
  GarbageServer& operator=(const GarbageServer&) = delete;

 private:
  int fd_ = -1;
  std::atomic<bool> stop_{false};
  std::string bytes_;
  std::thread thread_;
};

}  // namespace rdma_exporter::testing
