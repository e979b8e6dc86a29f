#pragma once

// The `kubernetes` section: where the node's CRI and pod-resources sockets
// are, and how often they are asked.

#include <string>
#include <vector>

#include "common/yaml_walker.hpp"

namespace rdma_exporter::kubernetes {

// The runtimes' CRI sockets, tried in this order when `cri_socket` is not
// set: containerd, CRI-O, cri-dockerd.
inline const std::vector<std::string> kCriSockets = {
    "/run/containerd/containerd.sock", "/run/crio/crio.sock", "/run/cri-dockerd.sock"};
inline constexpr const char* kPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock";

struct Options {
  // Off by default: outside a pod the sockets are usually absent. The
  // shipped DaemonSet turns it on and mounts both sockets read-only.
  bool enabled = false;
  std::string cri_socket;  // empty: the first of kCriSockets that exists
  std::string pod_resources_socket = kPodResourcesSocket;  // empty: no device allocations
  Duration refresh_interval{std::chrono::seconds(30)};
  Duration timeout{std::chrono::seconds(2)};

  bool operator==(const Options&) const = default;
};

// The first of `candidates` that exists; "" when none does.
std::string find_cri_socket(const std::vector<std::string>& candidates);

void parse_options(Walker& w, const YAML::Node& node, const std::string& path, Options& out);
std::vector<std::string> validate_options(const Options& o);

}  // namespace rdma_exporter::kubernetes
