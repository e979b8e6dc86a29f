#include "common/kubernetes/node_api.hpp"

#include <grpcpp/grpcpp.h>

#include "common/kubernetes/proto/cri.grpc.pb.h"
#include "common/kubernetes/proto/podresources.grpc.pb.h"

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

// One unary call with an empty request on a new channel to `socket`.
template <typename Stub, typename Request, typename Response>
Result<Response> call(const std::string& socket, std::chrono::milliseconds deadline,
                      const char* method,
                      grpc::Status (Stub::*rpc)(grpc::ClientContext*, const Request&, Response*)) {
  Stub stub(channel_to(socket));
  grpc::ClientContext ctx;
  set_deadline(ctx, deadline);
  Response response;
  const grpc::Status s = (stub.*rpc)(&ctx, Request(), &response);
  if (!s.ok()) return failed(socket, method, s);
  return response;
}

}  // namespace

Result<std::vector<ContainerInfo>> list_containers(const std::string& socket,
                                                   std::chrono::milliseconds deadline) {
  auto response =
      call(socket, deadline, "ListContainers", &runtime::v1::RuntimeService::Stub::ListContainers);
  if (!response) return response.error();
  std::vector<ContainerInfo> out;
  out.reserve(static_cast<std::size_t>(response->containers_size()));
  for (const auto& c : response->containers()) {
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
  auto response = call(socket, deadline, "List", &::v1::PodResourcesLister::Stub::List);
  if (!response) return response.error();
  std::vector<ContainerDevices> out;
  for (const auto& pod : response->pod_resources()) {
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
  auto response = call(socket, deadline, "GetAllocatableResources",
                       &::v1::PodResourcesLister::Stub::GetAllocatableResources);
  if (!response) return response.error();
  std::vector<DeviceAllocation> out;
  for (const auto& d : response->devices()) out.push_back(allocation_of(d));
  return out;
}

}  // namespace rdma_exporter::kubernetes
