#include "tests/support/fake_node_api.hpp"

#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

#include "common/kubernetes/proto/cri.grpc.pb.h"
#include "common/kubernetes/proto/podresources.grpc.pb.h"

namespace rdma_exporter::testing {
namespace {

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof a.sun_path) throw std::runtime_error("socket path too long: " + path);
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  return a;
}

}  // namespace

struct FakeNodeApi::Services {
  FakeNodeApi* owner;
  std::mutex mutex;
  NodeState state;

  NodeState snapshot() {
    std::lock_guard<std::mutex> lock(mutex);
    return state;
  }

  // Waits out the delay unless the call is cancelled; the status to answer.
  static grpc::Status wait_and_status(grpc::ServerContext* ctx, const NodeState& s) {
    const auto until = std::chrono::steady_clock::now() + s.delay;
    while (std::chrono::steady_clock::now() < until && !ctx->IsCancelled()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (s.fail_code != 0) {
      return grpc::Status(static_cast<grpc::StatusCode>(s.fail_code), "the fake fails");
    }
    return grpc::Status::OK;
  }

  static void fill(::v1::ContainerDevices* out, const FakeDevices& d) {
    out->set_resource_name(d.resource);
    for (const auto& id : d.ids) out->add_device_ids(id);
  }

  class Runtime final : public runtime::v1::RuntimeService::Service {
   public:
    explicit Runtime(Services& s) : s_(s) {}
    grpc::Status ListContainers(grpc::ServerContext* ctx, const runtime::v1::ListContainersRequest*,
                                runtime::v1::ListContainersResponse* out) override {
      const NodeState st = s_.snapshot();
      ++s_.owner->cri_calls_;
      if (auto status = wait_and_status(ctx, st); !status.ok()) return status;
      for (const auto& c : st.containers) {
        auto* pc = out->add_containers();
        pc->set_id(c.id);
        pc->mutable_metadata()->set_name(c.name);
        pc->set_state(runtime::v1::CONTAINER_RUNNING);
        for (const auto& [k, v] : c.labels) (*pc->mutable_labels())[k] = v;
      }
      return grpc::Status::OK;
    }

   private:
    Services& s_;
  };

  class PodResources final : public ::v1::PodResourcesLister::Service {
   public:
    explicit PodResources(Services& s) : s_(s) {}
    grpc::Status List(grpc::ServerContext* ctx, const ::v1::ListPodResourcesRequest*,
                      ::v1::ListPodResourcesResponse* out) override {
      const NodeState st = s_.snapshot();
      ++s_.owner->list_calls_;
      if (auto status = wait_and_status(ctx, st); !status.ok()) return status;
      for (const auto& p : st.pods) {
        auto* pp = out->add_pod_resources();
        pp->set_name(p.name);
        pp->set_namespace_(p.pod_namespace);
        for (const auto& c : p.containers) {
          auto* pc = pp->add_containers();
          pc->set_name(c.name);
          for (const auto& d : c.devices) fill(pc->add_devices(), d);
        }
      }
      return grpc::Status::OK;
    }
    grpc::Status GetAllocatableResources(grpc::ServerContext* ctx,
                                         const ::v1::AllocatableResourcesRequest*,
                                         ::v1::AllocatableResourcesResponse* out) override {
      const NodeState st = s_.snapshot();
      ++s_.owner->allocatable_calls_;
      if (auto status = wait_and_status(ctx, st); !status.ok()) return status;
      for (const auto& d : st.allocatable) fill(out->add_devices(), d);
      return grpc::Status::OK;
    }

   private:
    Services& s_;
  };

  Runtime runtime{*this};
  PodResources pod_resources{*this};
};

namespace {

std::unique_ptr<grpc::Server> serve(const std::string& path, grpc::Service& service) {
  ::unlink(path.c_str());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  auto server = builder.BuildAndStart();
  if (!server) throw std::runtime_error("cannot serve gRPC on " + path);
  return server;
}

}  // namespace

FakeNodeApi::FakeNodeApi(const std::string& cri_socket, const std::string& pod_resources_socket)
    : services_(std::make_unique<Services>()) {
  services_->owner = this;
  if (!cri_socket.empty()) cri_ = serve(cri_socket, services_->runtime);
  if (!pod_resources_socket.empty()) {
    pod_resources_ = serve(pod_resources_socket, services_->pod_resources);
  }
}

FakeNodeApi::~FakeNodeApi() {
  const auto soon = std::chrono::system_clock::now() + std::chrono::milliseconds(100);
  if (cri_) cri_->Shutdown(soon);
  if (pod_resources_) pod_resources_->Shutdown(soon);
}

void FakeNodeApi::set(NodeState s) {
  std::lock_guard<std::mutex> lock(services_->mutex);
  services_->state = std::move(s);
}

void make_refusing_socket(const std::string& path) {
  ::unlink(path.c_str());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_un a = unix_address(path);
  if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    throw std::runtime_error("cannot bind " + path);
  }
  ::close(fd);  // the file stays; nobody listens on it
}

GarbageServer::GarbageServer(const std::string& path, std::string bytes)
    : bytes_(std::move(bytes)) {
  ::unlink(path.c_str());
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_un a = unix_address(path);
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(fd_, 16) != 0) {
    throw std::runtime_error("cannot listen on " + path);
  }
  thread_ = std::thread([this] {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      [[maybe_unused]] const auto n = ::send(c, bytes_.data(), bytes_.size(), MSG_NOSIGNAL);
      ::close(c);
    }
  });
}

GarbageServer::~GarbageServer() {
  stop_ = true;
  thread_.join();
  ::close(fd_);
}

}  // namespace rdma_exporter::testing
