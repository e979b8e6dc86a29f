// common/kubernetes/pod_directory: cgroup paths to pod labels from the
// fake CRI, refreshes asked for by misses (once per container), pods that
// come, go and are replaced, sockets that fail and come back.

#include "common/kubernetes/pod_directory.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/support/fake_node_api.hpp"
#include "tests/support/wait.hpp"

namespace rdma_exporter::kubernetes {
namespace {

using namespace std::chrono_literals;
using testing::FakeNodeApi;
using testing::NodeState;

const std::string kContainerA = "5d1e0c4b2a39f8e7d6c5b4a3928170f6e5d4c3b2a1908f7e6d5c4b3a29180f7e";
const std::string kContainerB = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f91";
const std::string kContainerC = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f2";
const std::string kUidA = "0f3c1a2b-4d5e-4f60-8a9b-0c1d2e3f4a5b";
const std::string kUidB = "11112222-3333-4444-5555-666677778888";

// The systemd driver's path of a container of a burstable pod.
std::string path_of(const std::string& uid, const std::string& id) {
  std::string slice_uid = uid;
  for (auto& ch : slice_uid) {
    if (ch == '-') ch = '_';
  }
  std::string p =
      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + slice_uid + ".slice";
  if (!id.empty()) p += "/cri-containerd-" + id + ".scope";
  return p;
}

testing::FakeContainer container(const std::string& id, const std::string& uid,
                                 const std::string& ns, const std::string& pod,
                                 const std::string& name) {
  return {id,
          {{"io.kubernetes.pod.uid", uid},
           {"io.kubernetes.pod.namespace", ns},
           {"io.kubernetes.pod.name", pod},
           {"io.kubernetes.container.name", name}},
          name};
}

class PodDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("rdma-pod-dir-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string cri() const { return (dir_ / "cri.sock").string(); }
  std::string kubelet() const { return (dir_ / "kubelet.sock").string(); }
  DirectoryOptions options(std::chrono::milliseconds refresh = 1h) const {
    return DirectoryOptions{cri(), kubelet(), refresh, 2s};
  }

  std::filesystem::path dir_;
};

void expect_labels(const std::optional<PodLabels>& got, const std::string& ns,
                   const std::string& pod, const std::string& c) {
  ASSERT_TRUE(got);
  EXPECT_EQ(got->pod_namespace, ns);
  EXPECT_EQ(got->pod, pod);
  EXPECT_EQ(got->container, c);
}

TEST_F(PodDirectoryTest, KnownContainersAndPodsGetTheirLabels) {
  FakeNodeApi fake(cri(), kubelet());
  NodeState s;
  s.containers = {container(kContainerA, kUidA, "ns-a", "pod-a", "trainer"),
                  container(kContainerB, kUidB, "ns-b", "pod-b", "loader")};
  fake.set(s);
  PodDirectory d(options());
  d.refresh();
  expect_labels(d.lookup(path_of(kUidA, kContainerA)), "ns-a", "pod-a", "trainer");
  expect_labels(d.lookup(path_of(kUidB, kContainerB)), "ns-b", "pod-b", "loader");
  // The pod's own cgroup: its pod, no container.
  expect_labels(d.lookup(path_of(kUidB, "")), "ns-b", "pod-b", "");
  // No pod's path: nothing, and no refresh asked for.
  EXPECT_FALSE(d.lookup("/system.slice/sshd.service"));
  EXPECT_EQ(d.refreshes_asked(), 0u);
  EXPECT_TRUE(d.cri_health().up);
  EXPECT_EQ(d.cri_health().calls, 1u);
}

TEST_F(PodDirectoryTest, AMissAsksForOneRefreshPerContainer) {
  FakeNodeApi fake(cri(), "");
  PodDirectory d(DirectoryOptions{cri(), "", 1h, 2s});
  d.refresh();
  EXPECT_FALSE(d.lookup(path_of(kUidA, kContainerA)));
  EXPECT_FALSE(d.lookup(path_of(kUidA, kContainerA)));
  EXPECT_FALSE(d.lookup(path_of(kUidA, kContainerA)));
  EXPECT_EQ(d.refreshes_asked(), 1u);
  EXPECT_FALSE(d.lookup(path_of(kUidA, kContainerB)));
  EXPECT_FALSE(d.lookup(path_of(kUidB, "")));
  EXPECT_EQ(d.refreshes_asked(), 3u);
  // Listed later, it is found without asking again.
  NodeState s;
  s.containers = {container(kContainerA, kUidA, "ns-a", "pod-a", "trainer")};
  fake.set(s);
  d.refresh();
  expect_labels(d.lookup(path_of(kUidA, kContainerA)), "ns-a", "pod-a", "trainer");
  EXPECT_EQ(d.refreshes_asked(), 3u);
}

TEST_F(PodDirectoryTest, AMissWakesTheRefreshThread) {
  FakeNodeApi fake(cri(), "");
  PodDirectory d(DirectoryOptions{cri(), "", 1h, 2s});
  d.refresh();
  d.start();
  NodeState s;
  s.containers = {container(kContainerC, kUidA, "ns-c", "pod-c", "new")};
  fake.set(s);
  // The first collection of a new container's process misses and asks; the
  // thread refreshes at once, not an hour later.
  EXPECT_FALSE(d.lookup(path_of(kUidA, kContainerC)));
  ASSERT_TRUE(testing::eventually([&] { return d.cri_health().calls == 2; }));
  expect_labels(d.lookup(path_of(kUidA, kContainerC)), "ns-c", "pod-c", "new");
  d.stop();
  EXPECT_EQ(fake.list_containers_calls(), 2);
}

TEST_F(PodDirectoryTest, PodsThatStopAndContainersRestartedUnderANewId) {
  FakeNodeApi fake(cri(), "");
  PodDirectory d(DirectoryOptions{cri(), "", 1h, 2s});
  NodeState s;
  s.containers = {container(kContainerA, kUidA, "ns-a", "pod-a", "trainer"),
                  container(kContainerB, kUidB, "ns-b", "pod-b", "loader")};
  fake.set(s);
  d.refresh();
  // pod-b is gone; pod-a's container restarted under a new ID.
  s.containers = {container(kContainerC, kUidA, "ns-a", "pod-a", "trainer")};
  fake.set(s);
  d.refresh();
  expect_labels(d.lookup(path_of(kUidA, kContainerC)), "ns-a", "pod-a", "trainer");
  EXPECT_FALSE(d.lookup(path_of(kUidA, kContainerA)));
  EXPECT_FALSE(d.lookup(path_of(kUidB, kContainerB)));
  EXPECT_FALSE(d.lookup(path_of(kUidB, "")));
}

TEST_F(PodDirectoryTest, ASocketThatFailsKeepsTheLastAnswerAndComesBack) {
  PodDirectory d(options());
  {
    FakeNodeApi fake(cri(), kubelet());
    NodeState s;
    s.containers = {container(kContainerA, kUidA, "ns-a", "pod-a", "trainer")};
    s.pods = {{"pod-a", "ns-a", {{"trainer", {{"intel.com/sriov_rdma", {"0000:3b:02.1"}}}}}}};
    fake.set(s);
    d.refresh();
  }
  // Both servers gone: the last answers stay, the APIs are down.
  d.refresh();
  d.refresh();
  expect_labels(d.lookup(path_of(kUidA, kContainerA)), "ns-a", "pod-a", "trainer");
  ASSERT_EQ(d.allocations().size(), 1u);
  const ApiHealth cri_h = d.cri_health();
  EXPECT_FALSE(cri_h.up);
  EXPECT_EQ(cri_h.calls, 3u);
  EXPECT_EQ(cri_h.failures, 2u);
  EXPECT_NE(cri_h.last_error.find("UNAVAILABLE"), std::string::npos) << cri_h.last_error;
  const ApiHealth pr = d.pod_resources_health();
  EXPECT_FALSE(pr.up);
  EXPECT_EQ(pr.failures, 2u);
  // Back, with another answer.
  FakeNodeApi fake(cri(), kubelet());
  NodeState s;
  s.containers = {container(kContainerB, kUidB, "ns-b", "pod-b", "loader")};
  fake.set(s);
  d.refresh();
  EXPECT_TRUE(d.cri_health().up);
  EXPECT_TRUE(d.pod_resources_health().up);
  expect_labels(d.lookup(path_of(kUidB, kContainerB)), "ns-b", "pod-b", "loader");
  EXPECT_TRUE(d.allocations().empty());
}

TEST_F(PodDirectoryTest, AllocationsAndAllocatableDevices) {
  FakeNodeApi fake("", kubelet());
  NodeState s;
  s.pods = {{"pod-a", "ns-a", {{"trainer", {{"intel.com/sriov_rdma", {"0000:3b:02.1"}}}}}},
            {"pod-b", "ns-b", {{"loader", {{"rdma/shared_a", {"4"}}}}}}};
  s.allocatable = {{"intel.com/sriov_rdma", {"0000:3b:02.1", "0000:3b:02.2"}}};
  fake.set(s);
  PodDirectory d(DirectoryOptions{"", kubelet(), 1h, 2s});
  d.refresh();
  const auto a = d.allocations();
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].pod_name, "pod-a");
  EXPECT_EQ(a[0].devices[0].ids, (std::vector<std::string>{"0000:3b:02.1"}));
  EXPECT_EQ(a[1].pod_namespace, "ns-b");
  EXPECT_EQ(a[1].devices[0].resource, "rdma/shared_a");
  const auto all = d.allocatable();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].ids.size(), 2u);
  // Without a CRI socket, nothing is looked up or asked for.
  EXPECT_FALSE(d.lookup(path_of(kUidA, kContainerA)));
  EXPECT_EQ(d.refreshes_asked(), 0u);
  EXPECT_EQ(d.cri_health().calls, 0u);
}

}  // namespace
}  // namespace rdma_exporter::kubernetes
