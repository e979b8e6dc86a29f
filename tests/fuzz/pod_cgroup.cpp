// Fuzz harness: a cgroup path read as a pod's (common/kubernetes). The
// input is a path; whatever it names, a pod found in it has a UID of 32
// hex digits or 8-4-4-4-12, and a container ID, when there is one, of 12
// to 64 lower-case hex digits that appears in the path.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/kubernetes/cgroup_path.hpp"

using namespace rdma_exporter::kubernetes;

namespace {

bool lower_hex(std::string_view s) {
  for (const char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool uid_shape(std::string_view u) {
  if (u.size() == 32) return lower_hex(u);
  if (u.size() != 36) return false;
  for (std::size_t i = 0; i < u.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash != (u[i] == '-')) return false;
    if (!dash && !lower_hex(u.substr(i, 1))) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view path(reinterpret_cast<const char*>(data), size);
  const auto pod = parse_pod_cgroup(path);
  if (!pod) return 0;
  if (!uid_shape(pod->pod_uid)) std::abort();
  const std::string_view id = pod->container_id;
  if (!id.empty() && (id.size() < 12 || id.size() > 64 || !lower_hex(id) ||
                      path.find(id) == std::string_view::npos)) {
    std::abort();
  }
  if (id.empty() && !pod->runtime.empty()) std::abort();
  return 0;
}
