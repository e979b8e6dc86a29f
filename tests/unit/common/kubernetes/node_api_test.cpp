// common/kubernetes/node_api: CRI and pod-resources calls against fake
// servers speaking real gRPC on unix sockets; every way a socket can fail.

#include "common/kubernetes/node_api.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/support/fake_node_api.hpp"

namespace rdma_exporter::kubernetes {
namespace {

using namespace std::chrono_literals;
using testing::FakeNodeApi;
using testing::NodeState;

class NodeApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("rdma-node-api-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const char* name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

std::map<std::string, std::string> pod_labels(const std::string& uid, const std::string& ns,
                                              const std::string& pod, const std::string& c) {
  return {{"io.kubernetes.pod.uid", uid},
          {"io.kubernetes.pod.namespace", ns},
          {"io.kubernetes.pod.name", pod},
          {"io.kubernetes.container.name", c},
          {"io.kubernetes.container.restartCount", "3"}};
}

TEST_F(NodeApiTest, ContainersComeWithTheirPodsLabels) {
  FakeNodeApi fake(path("cri.sock"), "");
  NodeState s;
  s.containers = {
      {"c0ffee01", pod_labels("uid-a", "ns-a", "pod-a", "trainer"), "meta-a"},
      {"c0ffee02", pod_labels("uid-b", "ns-b", "pod-b", "sidecar"), "meta-b"},
      // Not made by the kubelet: no pod UID label.
      {"c0ffee03", {{"io.kubernetes.pod.name", "stray"}}, "meta-c"},
  };
  fake.set(s);
  const auto got = list_containers(path("cri.sock"), 2s);
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_EQ(got->size(), 2u);
  const ContainerInfo& a = (*got)[0];
  EXPECT_EQ(a.id, "c0ffee01");
  EXPECT_EQ(a.pod_uid, "uid-a");
  EXPECT_EQ(a.pod_namespace, "ns-a");
  EXPECT_EQ(a.pod_name, "pod-a");
  EXPECT_EQ(a.name, "trainer");
  const ContainerInfo& b = (*got)[1];
  EXPECT_EQ(b.id, "c0ffee02");
  EXPECT_EQ(b.pod_uid, "uid-b");
  EXPECT_EQ(b.pod_namespace, "ns-b");
  EXPECT_EQ(b.pod_name, "pod-b");
  EXPECT_EQ(b.name, "sidecar");
  EXPECT_EQ(fake.list_containers_calls(), 1);
}

TEST_F(NodeApiTest, ThousandsOfContainers) {
  FakeNodeApi fake(path("cri.sock"), "");
  NodeState s;
  for (int i = 0; i < 5000; ++i) {
    const std::string n = std::to_string(i);
    s.containers.push_back(
        {"id" + n, pod_labels("u" + n, "ns" + std::to_string(i % 7), "pod" + n, "c" + n), "m"});
  }
  fake.set(s);
  const auto got = list_containers(path("cri.sock"), 10s);
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_EQ(got->size(), 5000u);
  EXPECT_EQ((*got)[4321].id, "id4321");
  EXPECT_EQ((*got)[4321].pod_namespace, "ns2");
  EXPECT_EQ((*got)[4321].name, "c4321");
}

TEST_F(NodeApiTest, DevicesOfEachContainerAndOfTheNode) {
  FakeNodeApi fake("", path("kubelet.sock"));
  NodeState s;
  s.pods = {
      {"pod-a",
       "ns-a",
       {{"trainer",
         {{"intel.com/sriov_rdma", {"0000:3b:02.1", "0000:3b:02.2"}}, {"rdma/shared_a", {"7"}}}},
        {"no-devices", {}}}},
      {"pod-b", "ns-b", {{"worker", {{"intel.com/sriov_rdma", {"0000:af:00.3"}}}}}},
  };
  s.allocatable = {{"intel.com/sriov_rdma", {"0000:3b:02.1", "0000:3b:02.2", "0000:af:00.3"}},
                   {"rdma/shared_a", {"0", "1"}}};
  fake.set(s);
  const auto got = list_pod_devices(path("kubelet.sock"), 2s);
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_EQ(got->size(), 2u);  // the container without devices is left out
  const ContainerDevices& a = (*got)[0];
  EXPECT_EQ(a.pod_namespace, "ns-a");
  EXPECT_EQ(a.pod_name, "pod-a");
  EXPECT_EQ(a.container, "trainer");
  ASSERT_EQ(a.devices.size(), 2u);
  EXPECT_EQ(a.devices[0].resource, "intel.com/sriov_rdma");
  EXPECT_EQ(a.devices[0].ids, (std::vector<std::string>{"0000:3b:02.1", "0000:3b:02.2"}));
  EXPECT_EQ(a.devices[1].resource, "rdma/shared_a");
  EXPECT_EQ(a.devices[1].ids, (std::vector<std::string>{"7"}));
  const ContainerDevices& b = (*got)[1];
  EXPECT_EQ(b.pod_namespace, "ns-b");
  EXPECT_EQ(b.pod_name, "pod-b");
  EXPECT_EQ(b.container, "worker");
  ASSERT_EQ(b.devices.size(), 1u);
  EXPECT_EQ(b.devices[0].ids, (std::vector<std::string>{"0000:af:00.3"}));

  const auto all = allocatable_devices(path("kubelet.sock"), 2s);
  ASSERT_TRUE(all) << all.error().message;
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].resource, "intel.com/sriov_rdma");
  EXPECT_EQ((*all)[0].ids.size(), 3u);
  EXPECT_EQ((*all)[1].resource, "rdma/shared_a");
  EXPECT_EQ((*all)[1].ids, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(fake.list_calls(), 1);
  EXPECT_EQ(fake.allocatable_calls(), 1);
}

// Each failure is an error that names the socket, the method and the gRPC
// status, and never throws or hangs past the deadline.
void expect_error(const Result<std::vector<ContainerInfo>>& r, const std::string& socket,
                  const std::string& status) {
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind(socket + ": ListContainers: " + status, 0), 0u)
      << r.error().message;
}

TEST_F(NodeApiTest, AMissingSocket) {
  const auto r = list_containers(path("absent.sock"), 2s);
  expect_error(r, path("absent.sock"), "UNAVAILABLE");
  EXPECT_EQ(r.error().code, 14);
}

TEST_F(NodeApiTest, ASocketNobodyListensOn) {
  testing::make_refusing_socket(path("refuses.sock"));
  expect_error(list_containers(path("refuses.sock"), 2s), path("refuses.sock"), "UNAVAILABLE");
}

TEST_F(NodeApiTest, AServerThatDoesNotAnswerInTime) {
  FakeNodeApi fake(path("cri.sock"), "");
  NodeState s;
  s.delay = 30s;
  fake.set(s);
  expect_error(list_containers(path("cri.sock"), 200ms), path("cri.sock"), "DEADLINE_EXCEEDED");
  EXPECT_EQ(fake.list_containers_calls(), 1);
}

TEST_F(NodeApiTest, AServerThatFails) {
  FakeNodeApi fake(path("cri.sock"), path("kubelet.sock"));
  NodeState s;
  s.fail_code = 7;  // PERMISSION_DENIED
  fake.set(s);
  expect_error(list_containers(path("cri.sock"), 2s), path("cri.sock"), "PERMISSION_DENIED");
  const auto d = list_pod_devices(path("kubelet.sock"), 2s);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().message, path("kubelet.sock") + ": List: PERMISSION_DENIED: the fake fails");
  EXPECT_EQ(d.error().code, 7);  // the gRPC status code, for telling kinds of failure apart
}

TEST_F(NodeApiTest, AServerThatIsNoGrpcServer) {
  for (const std::string& garbage :
       {std::string("HTTP/1.1 200 OK\r\n\r\nhello"), std::string(4096, '\xff'), std::string()}) {
    testing::GarbageServer server(path("garbage.sock"), garbage);
    const auto r = list_containers(path("garbage.sock"), 2s);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message.rfind(path("garbage.sock") + ": ListContainers: ", 0), 0u)
        << r.error().message;
  }
}

TEST_F(NodeApiTest, TheWrongServiceOnTheSocket) {
  // The kubelet's socket given as the runtime's: the method is not there.
  FakeNodeApi fake("", path("kubelet.sock"));
  expect_error(list_containers(path("kubelet.sock"), 2s), path("kubelet.sock"), "UNIMPLEMENTED");
}

}  // namespace
}  // namespace rdma_exporter::kubernetes
