// fake_node_api CRI_SOCKET POD_RESOURCES_SOCKET STATE.yml: a node's CRI and
// pod-resources servers (tests/support/fake_node_api.hpp) as a process, for
// the integration and VM tests. "-" for a socket: not served. Prints
// "ready" once both listen; re-reads STATE.yml on SIGHUP; ends on SIGTERM
// or SIGINT. STATE.yml:
//   containers:   # what ListContainers answers, with the kubelet's labels
//     - {id: 5d1e..., pod_uid: 0f3c...-..., namespace: ns, pod: job-0, container: worker}
//   pods:         # what List answers
//     - {namespace: ns, pod: job-0, containers: [{name: worker, devices:
//         [{resource: intel.com/sriov_rdma, ids: ["0000:3b:02.1"]}]}]}
//   allocatable: [{resource: intel.com/sriov_rdma, ids: ["0000:3b:02.1"]}]

#include <yaml-cpp/yaml.h>

#include <csignal>
#include <exception>
#include <iostream>
#include <string>

#include "tests/support/fake_node_api.hpp"

namespace {

using rdma_exporter::testing::FakeDevices;
using rdma_exporter::testing::NodeState;

std::vector<FakeDevices> devices_of(const YAML::Node& list) {
  std::vector<FakeDevices> out;
  for (const auto& d : list) {
    out.push_back({d["resource"].as<std::string>(), d["ids"].as<std::vector<std::string>>()});
  }
  return out;
}

NodeState read_state(const std::string& path) {
  const YAML::Node doc = YAML::LoadFile(path);
  NodeState st;
  for (const auto& c : doc["containers"]) {
    const auto name = c["container"].as<std::string>();
    st.containers.push_back({c["id"].as<std::string>(),
                             {{"io.kubernetes.pod.uid", c["pod_uid"].as<std::string>()},
                              {"io.kubernetes.pod.namespace", c["namespace"].as<std::string>()},
                              {"io.kubernetes.pod.name", c["pod"].as<std::string>()},
                              {"io.kubernetes.container.name", name}},
                             name});
  }
  for (const auto& p : doc["pods"]) {
    rdma_exporter::testing::FakePod pod{
        p["pod"].as<std::string>(), p["namespace"].as<std::string>(), {}};
    for (const auto& c : p["containers"]) {
      pod.containers.push_back({c["name"].as<std::string>(), devices_of(c["devices"])});
    }
    st.pods.push_back(std::move(pod));
  }
  if (doc["allocatable"]) st.allocatable = devices_of(doc["allocatable"]);
  return st;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: fake_node_api CRI_SOCKET|- POD_RESOURCES_SOCKET|- STATE.yml\n";
    return 2;
  }
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before the servers' threads start
  try {
    const std::string cri = argv[1] == std::string("-") ? "" : argv[1];
    const std::string pod_resources = argv[2] == std::string("-") ? "" : argv[2];
    rdma_exporter::testing::FakeNodeApi api(cri, pod_resources);
    api.set(read_state(argv[3]));
    std::cout << "ready" << std::endl;
    for (;;) {
      int sig = 0;
      sigwait(&signals, &sig);
      if (sig != SIGHUP) break;
      api.set(read_state(argv[3]));
      std::cout << "reloaded" << std::endl;
    }
  } catch (const std::exception& e) {
    std::cerr << "fake_node_api: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
