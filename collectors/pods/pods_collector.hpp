#pragma once

#include <string>

#include "collectors/collector.hpp"

namespace rdma_exporter {

// Which pod's container was allocated which RDMA device, from the kubelet's
// pod-resources answer (common/kubernetes): rdma_device_pod_info, and
// which devices the node can allocate at all: rdma_device_allocatable_info. An
// allocated device ID names an RDMA device when it is the device's name or
// the bus ID of the function behind it (<sysfs>/class/infiniband/<dev>/device:
// a virtual function's PCI address, an auxiliary device's name). IDs that
// name no RDMA device (other resources, the opaque slots of a shared device
// plugin) are left out. Runs only with kubernetes.enabled.
class PodsCollector final : public Collector {
 public:
  explicit PodsCollector(std::string sysfs_root) : sysfs_root_(std::move(sysfs_root)) {}
  std::string_view name() const override { return "pods"; }
  std::vector<std::string> collect(Scrape& scrape, MetricSink& sink) override;

 private:
  std::string sysfs_root_;
};

}  // namespace rdma_exporter
