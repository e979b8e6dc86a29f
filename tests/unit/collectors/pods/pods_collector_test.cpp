// rdma_device_pod_info: the kubelet's device allocations joined to the RDMA
// devices they name, through a fake pod-resources server speaking gRPC and
// a sysfs tree whose device links lead to PCI and auxiliary functions.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/kubernetes/pod_directory.hpp"
#include "exporter/collection.hpp"
#include "exporter/config.hpp"
#include "tests/fake_kernel/fake_nldev.hpp"
#include "tests/support/fake_node_api.hpp"
#include "tests/support/snapshot_query.hpp"

namespace rdma_exporter {
namespace {

namespace fs = std::filesystem;
using testing::FakeDevice;
using testing::FakeNldev;
using testing::FakePort;
using testing::sample;
using testing::series_count;

class PodsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "pods_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    // mlx5_0 a physical function, mlx5_1 one of its virtual functions,
    // mlx5_2 an auxiliary (sub)function, rxe0 with no function at all.
    function("mlx5_0", "devices/pci0000:3a/0000:3b:00.0");
    function("mlx5_1", "devices/pci0000:3a/0000:3b:02.1");
    function("mlx5_2", "devices/pci0000:3a/0000:3b:00.0/mlx5_core.sf.4");
    fs::create_directories(dir_ / "sys/class/infiniband/rxe0");
    fs::create_directories(dir_ / "sys/devices/pci0000:af/0000:af:00.0");  // a GPU, no RDMA

    std::vector<FakeDevice> devices;
    uint32_t index = 1;
    for (const char* name : {"mlx5_0", "mlx5_1", "mlx5_2", "rxe0"}) {
      FakeDevice d{.index = index++, .name = name};
      d.ports.push_back(FakePort{.index = 1, .netdev = std::string("eth_") + name});
      devices.push_back(d);
    }
    kernel_->devices = devices;
    config_.sysfs.root = (dir_ / "sys").string();
    config_.collectors.set_enabled("sysfs", false);
    config_.collectors.set_enabled("pcie", false);
    config_.kubernetes.enabled = true;
    config_.kubernetes.cri_socket = "";
    config_.kubernetes.pod_resources_socket = (dir_ / "kubelet.sock").string();
    config_.kubernetes.refresh_interval = std::chrono::hours(1);
  }

  // <sys>/class/infiniband/<dev>/device -> <sys>/<target>, as the kernel
  // links them (relative).
  void function(const std::string& dev, const std::string& target) {
    const fs::path sys = dir_ / "sys";
    fs::create_directories(sys / target);
    fs::create_directories(sys / "class/infiniband" / dev);
    fs::create_symlink(fs::path("../../..") / target, sys / "class/infiniband" / dev / "device");
  }

  Collection& collection() {
    if (!collection_) {
      collection_ = std::make_unique<Collection>(config_, std::move(kernel_));
    }
    return *collection_;
  }
  std::shared_ptr<const Snapshot> collect() { return collection().collect(); }

  fs::path dir_;
  Config config_;
  std::unique_ptr<FakeNldev> kernel_ = std::make_unique<FakeNldev>();
  std::unique_ptr<Collection> collection_;
};

testing::NodeState allocations() {
  testing::NodeState st;
  st.pods = {{"job-0",
              "ns-train",
              {{"worker",
                {{"intel.com/sriov_rdma", {"0000:3b:02.1"}},          // a virtual function
                 {"nvidia.com/gpu", {"GPU-8f2c", "0000:af:00.0"}}}},  // not RDMA
               {"sidecar", {}}}},
             {"cache-3",
              "ns-store",
              {{"io",
                {{"rdma/hca_shared_a", {"0", "1"}},                // opaque slots
                 {"example.com/sf", {"mlx5_core.sf.4"}},           // an auxiliary device
                 {"example.com/rdma_dev", {"rxe0", "rxe0"}}}}}}};  // by name, twice
  return st;
}

TEST_F(PodsTest, AllocatedDevicesAreJoinedToTheirPodsByPciAddressAuxNameOrDeviceName) {
  testing::FakeNodeApi fake("", config_.kubernetes.pod_resources_socket);
  fake.set(allocations());
  auto s = collect();
  ASSERT_TRUE(s->all_succeeded());
  EXPECT_EQ(sample(*s, "rdma_device_pod_info",
                   {{"device", "mlx5_1"},
                    {"namespace", "ns-train"},
                    {"pod", "job-0"},
                    {"container", "worker"},
                    {"resource", "intel.com/sriov_rdma"},
                    {"device_id", "0000:3b:02.1"}}),
            1.0);
  EXPECT_EQ(sample(*s, "rdma_device_pod_info",
                   {{"device", "mlx5_2"},
                    {"namespace", "ns-store"},
                    {"pod", "cache-3"},
                    {"container", "io"},
                    {"resource", "example.com/sf"},
                    {"device_id", "mlx5_core.sf.4"}}),
            1.0);
  EXPECT_EQ(sample(*s, "rdma_device_pod_info",
                   {{"device", "rxe0"},
                    {"namespace", "ns-store"},
                    {"pod", "cache-3"},
                    {"container", "io"},
                    {"resource", "example.com/rdma_dev"},
                    {"device_id", "rxe0"}}),
            1.0);
  // Slots, a GPU and a PCI function without an RDMA device name none; the
  // physical function mlx5_0 was allocated to no one.
  EXPECT_EQ(series_count(*s, "rdma_device_pod_info"), 3U);
  EXPECT_EQ(series_count(*s, "rdma_device_pod_info", {{"device", "mlx5_0"}}), 0U);
  EXPECT_EQ(sample(*s, "rdma_exporter_collector_success", {{"collector", "pods"}}), 1.0);
}

// What the node can allocate: the kubelet lists every device of each
// resource, allocated or not, with the same IDs as the allocations; a
// device offered by two resources is one series for each, an ID repeated
// within one resource is one series, and IDs of no RDMA device are left out.
TEST_F(PodsTest, AllocatableDevicesAreListedByResourceWhetherAllocatedOrNot) {
  testing::FakeNodeApi fake("", config_.kubernetes.pod_resources_socket);
  testing::NodeState st = allocations();
  st.allocatable = {{"intel.com/sriov_rdma", {"0000:3b:02.1", "0000:3b:00.0", "0000:3b:02.1"}},
                    {"example.com/rdma_dev", {"rxe0", "mlx5_1"}},
                    {"rdma/hca_shared_a", {"0", "1", "2"}},
                    {"nvidia.com/gpu", {"0000:af:00.0"}}};
  fake.set(st);
  auto s = collect();
  ASSERT_TRUE(s->all_succeeded());
  EXPECT_EQ(sample(*s, "rdma_device_allocatable_info",
                   {{"device", "mlx5_1"},
                    {"resource", "intel.com/sriov_rdma"},
                    {"device_id", "0000:3b:02.1"}}),
            1.0);
  EXPECT_EQ(sample(*s, "rdma_device_allocatable_info",
                   {{"device", "mlx5_0"},
                    {"resource", "intel.com/sriov_rdma"},
                    {"device_id", "0000:3b:00.0"}}),
            1.0);
  EXPECT_EQ(
      sample(*s, "rdma_device_allocatable_info",
             {{"device", "rxe0"}, {"resource", "example.com/rdma_dev"}, {"device_id", "rxe0"}}),
      1.0);
  EXPECT_EQ(
      sample(*s, "rdma_device_allocatable_info",
             {{"device", "mlx5_1"}, {"resource", "example.com/rdma_dev"}, {"device_id", "mlx5_1"}}),
      1.0);
  EXPECT_EQ(series_count(*s, "rdma_device_allocatable_info"), 4U);
  EXPECT_EQ(series_count(*s, "rdma_device_allocatable_info", {{"device", "mlx5_2"}}), 0U);
  // The allocations are still there beside them.
  EXPECT_EQ(series_count(*s, "rdma_device_pod_info"), 3U);
}

// A node with devices to give but no pod holding one yet.
TEST_F(PodsTest, AllocatableDevicesShowWithNoAllocations) {
  testing::FakeNodeApi fake("", config_.kubernetes.pod_resources_socket);
  testing::NodeState st;
  st.allocatable = {{"example.com/sf", {"mlx5_core.sf.4"}}};
  fake.set(st);
  auto s = collect();
  ASSERT_TRUE(s->all_succeeded());
  EXPECT_EQ(
      sample(
          *s, "rdma_device_allocatable_info",
          {{"device", "mlx5_2"}, {"resource", "example.com/sf"}, {"device_id", "mlx5_core.sf.4"}}),
      1.0);
  EXPECT_EQ(series_count(*s, "rdma_device_allocatable_info"), 1U);
  EXPECT_EQ(series_count(*s, "rdma_device_pod_info"), 0U);
}

// Pods that stop and are replaced: the next answer is the truth, the old
// pod's series go.
TEST_F(PodsTest, APodReplacedBetweenCollectionsMovesTheDevice) {
  testing::FakeNodeApi fake("", config_.kubernetes.pod_resources_socket);
  fake.set(allocations());
  auto s = collect();
  ASSERT_EQ(series_count(*s, "rdma_device_pod_info", {{"pod", "job-0"}}), 1U);
  testing::NodeState next;
  next.pods = {{"job-1", "ns-train", {{"worker", {{"intel.com/sriov_rdma", {"0000:3b:02.1"}}}}}}};
  fake.set(next);
  collection().pods()->refresh();
  s = collect();
  EXPECT_EQ(series_count(*s, "rdma_device_pod_info", {{"pod", "job-0"}}), 0U);
  EXPECT_EQ(series_count(*s, "rdma_device_pod_info", {{"pod", "cache-3"}}), 0U);
  EXPECT_EQ(sample(*s, "rdma_device_pod_info",
                   {{"device", "mlx5_1"}, {"pod", "job-1"}, {"container", "worker"}}),
            1.0);
  EXPECT_EQ(series_count(*s, "rdma_device_pod_info"), 1U);
}

// A kubelet that is not there: no series, the collector still succeeds (the
// API's gauge says why), and the device filter's devices are the only ones.
TEST_F(PodsTest, AMissingSocketLeavesTheInfoOutAndShowsInTheApiGauge) {
  auto s = collect();
  ASSERT_TRUE(s->all_succeeded());
  EXPECT_EQ(series_count(*s, "rdma_device_pod_info"), 0U);
  EXPECT_EQ(sample(*s, "rdma_exporter_kubernetes_api_up", {{"api", "pod_resources"}}), 0.0);
  EXPECT_EQ(sample(*s, "rdma_exporter_collector_success", {{"collector", "pods"}}), 1.0);
}

TEST_F(PodsTest, FilteredDevicesAreLeftOut) {
  config_.devices.exclude = {"mlx5_1"};
  testing::FakeNodeApi fake("", config_.kubernetes.pod_resources_socket);
  fake.set(allocations());
  auto s = collect();
  EXPECT_EQ(series_count(*s, "rdma_device_pod_info", {{"device", "mlx5_1"}}), 0U);
  EXPECT_EQ(series_count(*s, "rdma_device_pod_info"), 2U);
}

// Off by default: the collector does not run, nothing of it shows.
TEST_F(PodsTest, WithoutTheKubernetesSectionTheCollectorDoesNotRun) {
  config_.kubernetes = kubernetes::Options();
  testing::FakeNodeApi fake("", (dir_ / "kubelet.sock").string());
  fake.set(allocations());
  auto s = collect();
  ASSERT_TRUE(s->all_succeeded());
  EXPECT_EQ(series_count(*s, "rdma_device_pod_info"), 0U);
  EXPECT_EQ(series_count(*s, "rdma_exporter_collector_success", {{"collector", "pods"}}), 0U);
  EXPECT_EQ(fake.list_calls(), 0);
}

}  // namespace
}  // namespace rdma_exporter
