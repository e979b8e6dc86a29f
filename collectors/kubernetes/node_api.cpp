#include "collectors/kubernetes/node_api.hpp"

#include <grpcpp/grpcpp.h>

#include "collectors/kubernetes/proto/cri.grpc.pb.h"
#include "collectors/kubernetes/proto/podresources.grpc.pb.h"

namespace rdma_exporter::kubernetes {
namespace {

std::shared_ptr<grpc::Channel> channel_to(const std::string& socket) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxAnswerBytes);
  // One attempt per call: the caller's schedule is the retry.
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  return grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), args);
}

void set_deadline(grpc::ClientContext& ctx, std::chrono::milliseconds deadline) {
  ctx.set_deadline(std::chrono::system_clock::now() + deadline);
}

Error failed(const std::string& socket, const std::string& method, const grpc::Status& s) {
  static const char* const kCodes[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  const auto code = static_cast<std::size_t>(s.error_code());
  std::string what = socket + ": " + method + ": " +
                     (code < std::size(kCodes) ? kCodes[code] : "code " + std::to_string(code));
  if (!s.error_message().empty()) what += ": " + s.error_message();
  return Error{static_cast<int>(code), what};  // code: the gRPC status code
}

std::string label(const google::protobuf::Map<std::string, std::string>& labels,
                  const std::string& key) {
  const auto it = labels.find(key);
  return it == labels.end() ? std::string() : it->second;
}

DeviceAllocation allocation_of(const ::v1::ContainerDevices& d) {
  return DeviceAllocation{d.resource_name(), {d.device_ids().begin(), d.device_ids().end()}};
}

}  // namespace

Result<std::vector<ContainerInfo>> list_containers(const std::string& socket,
                                                   std::chrono::milliseconds deadline) {
  auto stub = runtime::v1::RuntimeService::NewStub(channel_to(socket));
  grpc::ClientContext ctx;
  set_deadline(ctx, deadline);
  runtime::v1::ListContainersRequest request;
  runtime::v1::ListContainersResponse response;
  const grpc::Status s = stub->ListContainers(&ctx, request, &response);
  if (!s.ok()) return failed(socket, "ListContainers", s);
  std::vector<ContainerInfo> out;
  out.reserve(static_cast<std::size_t>(response.containers_size()));
  for (const auto& c : response.containers()) {
    ContainerInfo info{c.id(), label(c.labels(), "io.kubernetes.pod.uid"),
                       label(c.labels(), "io.kubernetes.pod.namespace"),
                       label(c.labels(), "io.kubernetes.pod.name"),
                       label(c.labels(), "io.kubernetes.container.name")};
    if (info.id.empty() || info.pod_uid.empty()) continue;
    out.push_back(std::move(info));
  }
  return out;
}

Result<std::vector<ContainerDevices>> list_pod_devices(const std::string& socket,
                                                       std::chrono::milliseconds deadline) {
  auto stub = ::v1::PodResourcesLister::NewStub(channel_to(socket));
  grpc::ClientContext ctx;
  set_deadline(ctx, deadline);
  ::v1::ListPodResourcesRequest request;
  ::v1::ListPodResourcesResponse response;
  const grpc::Status s = stub->List(&ctx, request, &response);
  if (!s.ok()) return failed(socket, "List", s);
  std::vector<ContainerDevices> out;
  for (const auto& pod : response.pod_resources()) {
    for (const auto& c : pod.containers()) {
      if (c.devices_size() == 0) continue;
      ContainerDevices cd{pod.namespace_(), pod.name(), c.name(), {}};
      for (const auto& d : c.devices()) cd.devices.push_back(allocation_of(d));
      out.push_back(std::move(cd));
    }
  }
  return out;
}

Result<std::vector<DeviceAllocation>> allocatable_devices(const std::string& socket,
                                                          std::chrono::milliseconds deadline) {
  auto stub = ::v1::PodResourcesLister::NewStub(channel_to(socket));
  grpc::ClientContext ctx;
  set_deadline(ctx, deadline);
  ::v1::AllocatableResourcesRequest request;
  ::v1::AllocatableResourcesResponse response;
  const grpc::Status s = stub->GetAllocatableResources(&ctx, request, &response);
  if (!s.ok()) return failed(socket, "GetAllocatableResources", s);
  std::vector<DeviceAllocation> out;
  for (const auto& d : response.devices()) out.push_back(allocation_of(d));
  return out;
}

}  // namespace rdma_exporter::kubernetes
