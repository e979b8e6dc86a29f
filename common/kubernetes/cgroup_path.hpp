#pragma once

// The pod and container a process belongs to, read from its cgroup path as
// the kubelet and the container runtimes name them.

#include <optional>
#include <string>
#include <string_view>

namespace rdma_exporter::kubernetes {

enum class QosClass { guaranteed, burstable, besteffort };

struct PodCgroup {
  // The pod's UID as the API server writes it: a UUID with dashes
  // (8-4-4-4-12), or the 32 hex digits of a static pod's.
  std::string pod_uid;
  QosClass qos = QosClass::guaranteed;
  // The container's ID (hex, as the runtime reports it in CRI), empty for a
  // process in the pod's own cgroup (no container's).
  std::string container_id;
  // "containerd", "cri-o", "docker" from the scope's prefix; empty for a
  // bare ID (the cgroupfs driver's containerd) or no container.
  std::string runtime;
};

// The pod of a cgroup path: the path of a v2 "0::" line or of one v1
// hierarchy in /proc/PID/cgroup, with either cgroup driver:
//   systemd:  .../kubepods.slice/kubepods-burstable.slice/
//             kubepods-burstable-pod<uid, '_' for '-'>.slice/cri-containerd-<id>.scope
//   cgroupfs: .../kubepods/burstable/pod<uid>/<id>
// The pod's segment may follow any prefix (a node in a container, a cgroup
// namespace's "/../.."), and a systemd slice may carry the kubelet's cgroup
// root in its name (kubelet-kubepods-pod<uid>.slice). The segment after it
// names the container: cri-containerd-, crio- or docker-<id>.scope
// (systemd), <64 hex digits>, crio-<id> or docker-<id> (cgroupfs); segments
// below that are the container's own. A segment there that names no
// container (CRI-O's crio-conmon-<id>.scope, the runtime's monitor) leaves
// the container empty. nullopt for a path that is not a pod's.
std::optional<PodCgroup> parse_pod_cgroup(std::string_view path);

std::string_view qos_name(QosClass q);

}  // namespace rdma_exporter::kubernetes
