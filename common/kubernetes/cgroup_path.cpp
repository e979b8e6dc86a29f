#include "common/kubernetes/cgroup_path.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace rdma_exporter::kubernetes {
namespace {

bool lower_hex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

// A pod UID, with `dash` between its groups: 8-4-4-4-12 hex digits, or the
// 32 hex digits of a static pod's (a hash of its manifest).
std::optional<std::string> pod_uid(std::string_view s, char dash) {
  if (s.size() == 32 && lower_hex(s)) return std::string(s);
  if (s.size() != 36) return std::nullopt;
  std::string uid(s);
  for (const std::size_t at : {8u, 13u, 18u, 23u}) {
    if (uid[at] != dash) return std::nullopt;
    uid[at] = '-';
  }
  for (std::size_t i = 0; i < uid.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) continue;  // the dashes, checked above
    if (!lower_hex(std::string_view(uid).substr(i, 1))) return std::nullopt;
  }
  return uid;
}

// A container ID the runtimes put in a cgroup name after their prefix.
bool container_id(std::string_view s) {
  return s.size() >= 12 && s.size() <= 64 && lower_hex(s);
}

struct Prefix {
  std::string_view prefix;
  std::string_view runtime;
};

// The container of the segment after the pod's; false when it names none.
bool read_container(std::string_view seg, bool systemd, PodCgroup& out) {
  static constexpr std::array<Prefix, 3> kPrefixes = {{
      {"cri-containerd-", "containerd"},
      {"crio-", "cri-o"},
      {"docker-", "docker"},
  }};
  if (systemd) {
    if (!seg.ends_with(".scope")) return false;
    seg.remove_suffix(6);
  } else if (seg.size() == 64 && lower_hex(seg)) {
    out.container_id = seg;  // containerd under the cgroupfs driver
    return true;
  }
  for (const auto& p : kPrefixes) {
    if (!seg.starts_with(p.prefix)) continue;
    const std::string_view id = seg.substr(p.prefix.size());
    if (!container_id(id)) return false;  // crio-conmon-<id> among them
    out.container_id = id;
    out.runtime = p.runtime;
    return true;
  }
  return false;
}

// A systemd pod slice: [<root>-]kubepods[-burstable|-besteffort]-pod<uid>.slice.
std::optional<PodCgroup> systemd_pod(std::string_view seg) {
  if (!seg.ends_with(".slice")) return std::nullopt;
  seg.remove_suffix(6);
  const std::size_t pod = seg.rfind("-pod");
  if (pod == std::string_view::npos) return std::nullopt;
  auto uid = pod_uid(seg.substr(pod + 4), '_');
  if (!uid) return std::nullopt;
  std::string_view parent = seg.substr(0, pod);  // ...kubepods[-qos]
  PodCgroup out;
  if (parent.ends_with("-burstable")) {
    out.qos = QosClass::burstable;
    parent.remove_suffix(10);
  } else if (parent.ends_with("-besteffort")) {
    out.qos = QosClass::besteffort;
    parent.remove_suffix(11);
  }
  if (parent != "kubepods" && !parent.ends_with("-kubepods")) return std::nullopt;
  out.pod_uid = std::move(*uid);
  return out;
}

}  // namespace

std::optional<PodCgroup> parse_pod_cgroup(std::string_view path) {
  std::vector<std::string_view> segs;
  for (std::size_t at = 0; at <= path.size();) {
    std::size_t end = path.find('/', at);
    if (end == std::string_view::npos) end = path.size();
    if (end > at) segs.push_back(path.substr(at, end - at));
    at = end + 1;
  }
  // The pod's segment nearest the root: a container's own cgroups below it
  // cannot make a pod of their own.
  for (std::size_t i = 0; i < segs.size(); ++i) {
    std::optional<PodCgroup> pod;
    bool systemd = false;
    if ((pod = systemd_pod(segs[i]))) {
      systemd = true;
    } else if (segs[i].starts_with("pod") && i >= 1) {
      // cgroupfs: kubepods/pod<uid> or kubepods/<qos>/pod<uid>.
      auto uid = pod_uid(segs[i].substr(3), '-');
      std::size_t k = i - 1;
      QosClass qos = QosClass::guaranteed;
      if (segs[k] == "burstable" || segs[k] == "besteffort") {
        qos = segs[k] == "burstable" ? QosClass::burstable : QosClass::besteffort;
        if (k == 0) continue;
        --k;
      }
      if (!uid || segs[k] != "kubepods") continue;
      pod = PodCgroup{std::move(*uid), qos, {}, {}};
    }
    if (!pod) continue;
    if (i + 1 < segs.size()) read_container(segs[i + 1], systemd, *pod);
    return pod;
  }
  return std::nullopt;
}

std::string_view qos_name(QosClass q) {
  switch (q) {
    case QosClass::guaranteed:
      return "guaranteed";
    case QosClass::burstable:
      return "burstable";
    case QosClass::besteffort:
      return "besteffort";
  }
  return "unknown";
}

}  // namespace rdma_exporter::kubernetes
