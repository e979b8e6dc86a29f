#include "collectors/qp_counters/process_info.hpp"

#include <fstream>
#include <sstream>

#include "collectors/kernel/sysfs/reader.hpp"

namespace rdma_exporter {

std::optional<std::string> ProcessInfo::comm(uint32_t pid) {
  Entry& e = cache_[pid];
  if (!e.comm_read) {
    e.comm_read = true;
    auto text = sysfs::read_attribute(root_ / std::to_string(pid) / "comm");
    if (text && !text->empty()) e.comm = std::move(text).value();
  }
  return e.comm;
}

std::optional<std::string> ProcessInfo::cgroup(uint32_t pid) {
  Entry& e = cache_[pid];
  if (!e.cgroup_read) {
    e.cgroup_read = true;
    auto text = sysfs::read_attribute(root_ / std::to_string(pid) / "cgroup");
    if (text) {
      std::istringstream lines(*text);
      std::string line;
      std::optional<std::string> first;
      while (std::getline(lines, line)) {
        // "hierarchy-id:controllers:path"; cgroup v2 is "0::path".
        const auto a = line.find(':');
        const auto b = a == std::string::npos ? a : line.find(':', a + 1);
        if (b == std::string::npos) continue;
        std::string path = line.substr(b + 1);
        if (line.compare(0, b + 1, "0::") == 0) {
          e.cgroup = path;
          break;
        }
        if (!first) first = path;
      }
      if (!e.cgroup) e.cgroup = first;
    }
  }
  return e.cgroup;
}

}  // namespace rdma_exporter
