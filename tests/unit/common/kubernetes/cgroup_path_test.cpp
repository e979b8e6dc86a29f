// common/kubernetes/cgroup_path: pod UID, QoS class, container ID and
// runtime from the cgroup paths of both cgroup drivers, the common runtimes
// and both cgroup versions, written out by hand for each case.

#include "common/kubernetes/cgroup_path.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rdma_exporter::kubernetes {
namespace {

struct Case {
  const char* what;
  std::string path;
  std::string uid;
  QosClass qos;
  std::string container;
  std::string runtime;
};

// Container IDs: 64 hex digits each, distinct.
const std::string kIdA = "5d1e0c4b2a39f8e7d6c5b4a3928170f6e5d4c3b2a1908f7e6d5c4b3a29180f7e";
const std::string kIdB = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f91";
const std::string kIdC = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f2";
const std::string kIdD = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221103";
const std::string kIdE = "13579bdf02468ace13579bdf02468ace13579bdf02468ace13579bdf02468ac4";
const std::string kIdF = "2468ace013579bdf2468ace013579bdf2468ace013579bdf2468ace013579bd5";

TEST(PodCgroup, EachDriverRuntimeAndQosClass) {
  const std::vector<Case> cases = {
      // systemd driver, cgroup v2 (the 0:: line), containerd, burstable.
      {"systemd containerd burstable",
       "/kubepods.slice/kubepods-burstable.slice/"
       "kubepods-burstable-pod0f3c1a2b_4d5e_4f60_8a9b_0c1d2e3f4a5b.slice/cri-containerd-" +
           kIdA + ".scope",
       "0f3c1a2b-4d5e-4f60-8a9b-0c1d2e3f4a5b", QosClass::burstable, kIdA, "containerd"},
      // systemd driver, CRI-O, guaranteed (no QoS slice).
      {"systemd cri-o guaranteed",
       "/kubepods.slice/kubepods-pod11112222_3333_4444_5555_666677778888.slice/crio-" + kIdB +
           ".scope",
       "11112222-3333-4444-5555-666677778888", QosClass::guaranteed, kIdB, "cri-o"},
      // systemd driver, Docker through cri-dockerd, besteffort.
      {"systemd docker besteffort",
       "/kubepods.slice/kubepods-besteffort.slice/"
       "kubepods-besteffort-poda0b1c2d3_e4f5_4a6b_9c8d_7e6f5a4b3c2d.slice/docker-" +
           kIdC + ".scope",
       "a0b1c2d3-e4f5-4a6b-9c8d-7e6f5a4b3c2d", QosClass::besteffort, kIdC, "docker"},
      // cgroupfs driver (a v1 hierarchy's path), containerd: a bare ID.
      {"cgroupfs containerd burstable",
       "/kubepods/burstable/pod9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d/" + kIdD,
       "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", QosClass::burstable, kIdD, ""},
      // cgroupfs driver, CRI-O, guaranteed.
      {"cgroupfs cri-o guaranteed",
       "/kubepods/pod01234567-89ab-4cde-8f01-23456789abcd/crio-" + kIdE,
       "01234567-89ab-4cde-8f01-23456789abcd", QosClass::guaranteed, kIdE, "cri-o"},
      // cgroupfs driver, Docker, besteffort.
      {"cgroupfs docker besteffort",
       "/kubepods/besteffort/podfedcba98-7654-4321-8fed-cba987654321/docker-" + kIdF,
       "fedcba98-7654-4321-8fed-cba987654321", QosClass::besteffort, kIdF, "docker"},
      // Seen from a private cgroup namespace (the exporter in a pod).
      {"cgroup namespace",
       "/../../kubepods-burstable-pod22223333_4444_5555_6666_777788889999.slice/"
       "cri-containerd-" +
           kIdB + ".scope",
       "22223333-4444-5555-6666-777788889999", QosClass::burstable, kIdB, "containerd"},
      // A node in a container (kind): the kubelet's cgroup root in the names.
      {"kubelet cgroup root",
       "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
       "kubelet-kubepods-besteffort-pod33334444_5555_6666_7777_88889999aaaa.slice/"
       "cri-containerd-" +
           kIdC + ".scope",
       "33334444-5555-6666-7777-88889999aaaa", QosClass::besteffort, kIdC, "containerd"},
      // A node under a prefix with the cgroupfs driver.
      {"cgroupfs under a prefix",
       "/system.slice/node.scope/kubepods/burstable/pod44445555-6666-7777-8888-9999aaaabbbb/" +
           kIdA,
       "44445555-6666-7777-8888-9999aaaabbbb", QosClass::burstable, kIdA, ""},
      // A static pod: its UID is the 32 hex digits of its manifest's hash.
      {"static pod", "/kubepods/burstable/pod6d9e7f1a2b3c4d5e6f708192a3b4c5d6/" + kIdD,
       "6d9e7f1a2b3c4d5e6f708192a3b4c5d6", QosClass::burstable, kIdD, ""},
      // A cgroup the container made below its own: still the container.
      {"below the container",
       "/kubepods.slice/kubepods-pod55556666_7777_8888_9999_aaaabbbbcccc.slice/cri-containerd-" +
           kIdE + ".scope/init.scope",
       "55556666-7777-8888-9999-aaaabbbbcccc", QosClass::guaranteed, kIdE, "containerd"},
      // The pod's own cgroup: no container.
      {"pod cgroup", "/kubepods/besteffort/pod66667777-8888-9999-aaaa-bbbbccccdddd",
       "66667777-8888-9999-aaaa-bbbbccccdddd", QosClass::besteffort, "", ""},
      // CRI-O's monitor in the pod's cgroup: the pod, no container.
      {"crio conmon",
       "/kubepods.slice/kubepods-burstable.slice/"
       "kubepods-burstable-pod77778888_9999_aaaa_bbbb_ccccddddeeee.slice/crio-conmon-" +
           kIdF + ".scope",
       "77778888-9999-aaaa-bbbb-ccccddddeeee", QosClass::burstable, "", ""},
      // A segment after the pod's that is no container's name.
      {"unknown child", "/kubepods/pod88889999-aaaa-bbbb-cccc-ddddeeeeffff/not-a-container",
       "88889999-aaaa-bbbb-cccc-ddddeeeeffff", QosClass::guaranteed, "", ""},
  };
  for (const auto& c : cases) {
    const auto pod = parse_pod_cgroup(c.path);
    ASSERT_TRUE(pod) << c.what;
    EXPECT_EQ(pod->pod_uid, c.uid) << c.what;
    EXPECT_EQ(pod->qos, c.qos) << c.what;
    EXPECT_EQ(pod->container_id, c.container) << c.what;
    EXPECT_EQ(pod->runtime, c.runtime) << c.what;
  }
}

TEST(PodCgroup, PathsThatAreNoPodsAreLeftAlone) {
  const std::vector<std::string> paths = {
      "",
      "/",
      "/user.slice/user-1000.slice/session-3.scope",
      "/system.slice/docker-" + kIdA + ".scope",  // Docker without Kubernetes
      "/kubepods.slice",
      "/kubepods.slice/kubepods-burstable.slice",
      "/kubepods/burstable",
      "/kubepods",
      // A pod-like name without kubepods above it.
      "/foo/pod0f3c1a2b-4d5e-4f60-8a9b-0c1d2e3f4a5b/" + kIdB,
      "/mykubepods.slice/mykubepods-pod0f3c1a2b_4d5e_4f60_8a9b_0c1d2e3f4a5b.slice",
      // UIDs that are no UIDs: dashes in a systemd name, underscores in a
      // cgroupfs one, upper case, a wrong length, a non-hex digit.
      "/kubepods.slice/kubepods-pod0f3c1a2b-4d5e-4f60-8a9b-0c1d2e3f4a5b.slice",
      "/kubepods/pod0f3c1a2b_4d5e_4f60_8a9b_0c1d2e3f4a5b",
      "/kubepods/pod0F3C1A2B-4D5E-4F60-8A9B-0C1D2E3F4A5B",
      "/kubepods/pod0f3c1a2b-4d5e-4f60-8a9b-0c1d2e3f4a5",
      "/kubepods/pod0f3c1a2b-4d5e-4f60-8a9b-0c1d2e3f4a5g",
      // A dash where a digit belongs (found by the fuzz harness).
      "/kubepods/besteffort/pod9af-4a3b-8c2d-1a3b-8c2d-1e0f9ab87c6d",
      "/kubepods.slice/kubepods-pod0f3c1a2b_4d5e_4f60_8a9b_0c1d2e_f4a5b.slice",
      "/kubepods/burstable/pod",
      "/kubepods.slice/kubepods-burstable-pod.slice",
      "/kubepods.slice/kubepods-burstable-pod0f3c1a2b_4d5e_4f60_8a9b_0c1d2e3f4a5b.scope",
  };
  for (const auto& p : paths) EXPECT_FALSE(parse_pod_cgroup(p)) << p;
}

TEST(PodCgroup, ContainerNamesThatAreNoContainerIds) {
  const std::string pod = "/kubepods/burstable/pod0f3c1a2b-4d5e-4f60-8a9b-0c1d2e3f4a5b/";
  const std::string slice =
      "/kubepods.slice/kubepods-pod0f3c1a2b_4d5e_4f60_8a9b_0c1d2e3f4a5b.slice/";
  const std::vector<std::string> paths = {
      pod + kIdA.substr(0, 63),          // a bare ID must be 64 digits
      pod + "crio-" + kIdA + "0",        // more than 64
      pod + "docker-5D1E0C4B2A39",       // upper case
      pod + "crio-5d1e0c4b2a3",          // under 12
      slice + "cri-containerd-" + kIdA,  // systemd names end in .scope
      slice + "crio-" + kIdA + ".slice", slice + kIdA + ".scope",
  };
  for (const auto& p : paths) {
    const auto got = parse_pod_cgroup(p);
    ASSERT_TRUE(got) << p;
    EXPECT_EQ(got->pod_uid, "0f3c1a2b-4d5e-4f60-8a9b-0c1d2e3f4a5b") << p;
    EXPECT_EQ(got->container_id, "") << p;
    EXPECT_EQ(got->runtime, "") << p;
  }
  // Twelve digits are enough after a prefix.
  EXPECT_EQ(parse_pod_cgroup(pod + "docker-5d1e0c4b2a39")->container_id, "5d1e0c4b2a39");
}

TEST(PodCgroup, QosNames) {
  EXPECT_EQ(qos_name(QosClass::guaranteed), "guaranteed");
  EXPECT_EQ(qos_name(QosClass::burstable), "burstable");
  EXPECT_EQ(qos_name(QosClass::besteffort), "besteffort");
}

}  // namespace
}  // namespace rdma_exporter::kubernetes
