#include "collectors/qp_counters/process_info.hpp"

#include <string_view>

#include "common/kernel/sys/reader.hpp"

namespace rdma_exporter {

void ProcessInfo::next_collection(Clock::time_point now) {
  now_ = now;
  for (auto it = cache_.begin(); it != cache_.end();) {
    Entry& e = it->second;
    if (!e.used || now >= e.expires) {
      it = cache_.erase(it);
    } else {
      e.used = false;
      ++it;
    }
  }
}

ProcessInfo::Entry& ProcessInfo::entry(uint32_t pid) {
  auto [it, inserted] = cache_.try_emplace(pid);
  Entry& e = it->second;
  if (inserted) {
    // Half the age, plus up to the other half by pid: entries read in the
    // same collection do not all expire in the same one.
    e.expires = now_ + kMaxAge / 2 + (kMaxAge / 2) * (pid % 1024) / 1024;
  }
  e.used = true;
  return e;
}

std::optional<std::string> ProcessInfo::comm(uint32_t pid) {
  Entry& e = entry(pid);
  if (!e.comm_read) {
    e.comm_read = true;
    auto text = sysfs::read_attribute(root_ / std::to_string(pid) / "comm");
    if (text && !text->empty()) e.comm = std::move(text).value();
  }
  return e.comm;
}

std::optional<std::string> ProcessInfo::cgroup(uint32_t pid) {
  Entry& e = entry(pid);
  if (e.cgroup_read) return e.cgroup;
  e.cgroup_read = true;
  auto text = sysfs::read_attribute(root_ / std::to_string(pid) / "cgroup");
  if (!text) return e.cgroup;
  // One line per hierarchy, "hierarchy-id:controllers:path"; cgroup v2 is
  // "0::path" and wins over the first v1 hierarchy.
  std::string_view rest(*text);
  while (!rest.empty()) {
    const auto end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    const auto a = line.find(':');
    const auto b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    const std::string_view path = line.substr(b + 1);
    if (line.substr(0, b + 1) == "0::") {
      e.cgroup = std::string(path);
      break;
    }
    if (!e.cgroup) e.cgroup = std::string(path);
  }
  return e.cgroup;
}

}  // namespace rdma_exporter
