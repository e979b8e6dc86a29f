#include "collectors/pods/pods_collector.hpp"

#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "collectors/registry.hpp"
#include "common/kubernetes/pod_directory.hpp"

namespace rdma_exporter {

namespace {

namespace fs = std::filesystem;

// The bus ID of the function behind an RDMA device: the last part of the
// path its device link leads to. Empty for a device with none (Soft-RoCE).
std::string bus_id(const std::string& sysfs_root, const std::string& device) {
  std::error_code ec;
  const fs::path function =
      fs::canonical(fs::path(sysfs_root) / "class" / "infiniband" / device / "device", ec);
  return ec ? std::string() : function.filename().string();
}

}  // namespace

std::vector<std::string> PodsCollector::collect(Scrape& scrape, MetricSink& sink) {
  std::vector<std::string> errors;
  kubernetes::PodDirectory* pods = scrape.pods();
  if (pods == nullptr) return errors;
  const std::vector<kubernetes::ContainerDevices> allocations = pods->allocations();
  const std::vector<kubernetes::DeviceAllocation> allocatable = pods->allocatable();
  if (allocations.empty() && allocatable.empty()) return errors;
  const Topology* topology = scrape.topology_for(errors);
  if (topology == nullptr) return errors;

  // Every name an allocation may give a device by, to the device's name.
  std::map<std::string, std::string, std::less<>> device_of;
  for (const auto& entry : topology->devices) {
    const std::string& name = entry.device.name;
    device_of.emplace(name, name);
    if (std::string id = bus_id(sysfs_root_, name); !id.empty()) device_of.emplace(id, name);
  }

  // A device listed twice for one container (two resources naming it) is
  // one series per resource and ID; an exact repeat is one series.
  std::set<std::tuple<std::string, std::string, std::string, std::string, std::string, std::string>>
      seen;
  for (const auto& c : allocations) {
    for (const auto& alloc : c.devices) {
      for (const auto& id : alloc.ids) {
        auto it = device_of.find(id);
        if (it == device_of.end()) continue;
        if (!seen.emplace(it->second, c.pod_namespace, c.pod_name, c.container, alloc.resource, id)
                 .second) {
          continue;
        }
        sink.info("rdma_device_pod_info",
                  "An RDMA device allocated to a pod's container, from the kubelet's "
                  "pod-resources API; the value is always 1.",
                  {{"device", it->second},
                   {"namespace", c.pod_namespace},
                   {"pod", c.pod_name},
                   {"container", c.container},
                   {"resource", alloc.resource},
                   {"device_id", id}});
      }
    }
  }

  // What the node can allocate, allocated or not: with the above, which of
  // a resource's devices are free.
  std::set<std::tuple<std::string, std::string, std::string>> offered;
  for (const auto& alloc : allocatable) {
    for (const auto& id : alloc.ids) {
      auto it = device_of.find(id);
      if (it == device_of.end()) continue;
      if (!offered.emplace(it->second, alloc.resource, id).second) continue;
      sink.info("rdma_device_allocatable_info",
                "An RDMA device the kubelet can allocate to pods, from the pod-resources "
                "API's allocatable resources; the value is always 1.",
                {{"device", it->second}, {"resource", alloc.resource}, {"device_id", id}});
    }
  }
  return errors;
}

CollectorEntry pods_entry() {
  CollectorEntry e;
  e.name = "pods";
  e.help =
      "Which pod's container was allocated which RDMA device (rdma_device_pod_info) and which "
      "devices the node can allocate (rdma_device_allocatable_info), from the kubelet's "
      "pod-resources API; runs with kubernetes.enabled.";
  e.needs_kubernetes = true;
  e.make = [](const CollectorContext& c) { return std::make_unique<PodsCollector>(c.sysfs_root); };
  return e;
}

}  // namespace rdma_exporter
