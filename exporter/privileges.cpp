#include "exporter/privileges.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <sstream>

#include "common/kernel/sys/reader.hpp"

namespace rdma_exporter {
namespace {

constexpr int kCapNetAdmin = 12;
// The inode of the initial pid namespace (PROC_PID_INIT_INO in the kernel).
constexpr const char* kInitialPidNamespace = "pid:[4026531836]";

}  // namespace

Privileges read_privileges(const std::string& proc_root, const std::string& dev_root) {
  Privileges p;
  p.verbs_device = false;
  std::error_code dir_error;
  for (const auto& entry : std::filesystem::directory_iterator(dev_root, dir_error)) {
    if (entry.path().filename().string().rfind("uverbs", 0) == 0 &&
        ::access(entry.path().c_str(), R_OK | W_OK) == 0) {
      p.verbs_device = true;
    }
  }
  auto status = sysfs::read_attribute(proc_root + "/self/status");
  if (status) {
    std::istringstream lines(*status);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind("CapEff:", 0) != 0) continue;
      uint64_t caps = 0;
      const std::string hex = line.substr(7);
      const char* first = hex.data();
      while (*first == ' ' || *first == '\t') ++first;
      auto [end, ec] = std::from_chars(first, hex.data() + hex.size(), caps, 16);
      if (ec == std::errc() && end != first) p.cap_net_admin = ((caps >> kCapNetAdmin) & 1U) != 0U;
    }
  }
  char buf[64] = {};
  const std::string ns = proc_root + "/self/ns/pid";
  const ssize_t n = ::readlink(ns.c_str(), buf, sizeof buf - 1);
  if (n > 0)
    p.host_pid_namespace = std::string(buf, static_cast<std::size_t>(n)) == kInitialPidNamespace;
  return p;
}

std::vector<std::string> privilege_problems(const Config& config, const Privileges& have) {
  std::vector<std::string> out;
  for (const auto& e : collector_registry()) {
    if (!e.privilege_problems || !config.collectors.enabled(e.name)) continue;
    for (auto& problem : e.privilege_problems(config.collectors.options_of(e.name), have)) {
      out.push_back(std::move(problem));
    }
  }
  if (config.probe.enabled && !have.verbs_device) {
    out.emplace_back(
        "probe.enabled, but no /dev/infiniband/uverbs* device can be opened by this process: the "
        "probe cannot make queue pairs until one can (its responder refuses set-ups meanwhile)");
  }
  return out;
}

}  // namespace rdma_exporter
