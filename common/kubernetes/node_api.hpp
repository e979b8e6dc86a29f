#pragma once

// The node's own Kubernetes APIs, over their unix sockets: the container
// runtime's CRI (which container is which pod's) and the kubelet's
// pod-resources (which devices each container was allocated). Each call is
// one gRPC request with a deadline; every failure (no socket, refused, no
// answer within the deadline, not a gRPC server, a malformed answer) is an
// Error naming the socket and the gRPC status (Error::code is the gRPC status
// code: 14 UNAVAILABLE, 4 DEADLINE_EXCEEDED, ...).

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace rdma_exporter::kubernetes {

// A container as the runtime lists it, with the labels the kubelet gives
// every container it makes.
struct ContainerInfo {
  std::string id;
  std::string pod_uid;        // io.kubernetes.pod.uid
  std::string pod_namespace;  // io.kubernetes.pod.namespace
  std::string pod_name;       // io.kubernetes.pod.name
  std::string name;           // io.kubernetes.container.name
};

// Devices of one resource: its name ("intel.com/sriov_rdma") and the IDs
// the device plugin gave them (PCI addresses of virtual functions, RDMA
// device names, or opaque slots).
struct DeviceAllocation {
  std::string resource;
  std::vector<std::string> ids;
};

struct ContainerDevices {
  std::string pod_namespace;
  std::string pod_name;
  std::string container;
  std::vector<DeviceAllocation> devices;
};

// Answers larger than this are refused (a node's thousands of containers
// take a few MiB).
inline constexpr int kMaxAnswerBytes = 64 << 20;

// runtime.v1.RuntimeService/ListContainers: the containers the kubelet
// made (those with a pod UID label); the others are left out.
Result<std::vector<ContainerInfo>> list_containers(const std::string& socket,
                                                   std::chrono::milliseconds deadline);

// v1.PodResourcesLister/List: the devices of every container that has any.
Result<std::vector<ContainerDevices>> list_pod_devices(const std::string& socket,
                                                       std::chrono::milliseconds deadline);

// v1.PodResourcesLister/GetAllocatableResources: the devices the node can
// allocate, by resource.
Result<std::vector<DeviceAllocation>> allocatable_devices(const std::string& socket,
                                                          std::chrono::milliseconds deadline);

}  // namespace rdma_exporter::kubernetes
