#include "exporter/privileges.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <sstream>

#include "collectors/kernel/sysfs/reader.hpp"

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
  if (config.collectors.optional_counters && !have.cap_net_admin &&
      std::any_of(config.optional_counters.ports.begin(), config.optional_counters.ports.end(),
                  [](const auto& r) { return r.writes(); })) {
    out.emplace_back(
        "optional_counters.ports asks to enable optional counters, but this process lacks "
        "CAP_NET_ADMIN: those kernel writes will fail with EPERM (reading still works)");
  }
  if (config.probe.enabled && !have.verbs_device) {
    out.emplace_back(
        "probe.enabled, but no /dev/infiniband/uverbs* device can be opened by this process: the "
        "probe cannot make queue pairs until one can (its responder refuses set-ups meanwhile)");
  }
  if (!config.collectors.qp_counters) return out;
  bool writes = false;
  for (const auto& p : config.qp_counters.ports) {
    if (p.mode != QpCountersOptions::Mode::observe) writes = true;
  }
  if (writes && !have.cap_net_admin) {
    out.emplace_back(
        "qp_counters.ports asks for auto or manual counter modes, but this process lacks "
        "CAP_NET_ADMIN: those kernel writes will fail with EPERM (reading still works)");
  }
  if (!have.host_pid_namespace) {
    out.emplace_back(
        "not in the host pid namespace: per-QP counter sets and QPs of processes in other "
        "namespaces cannot be attributed to them (pid and comm labels stay empty)");
  }
  return out;
}

}  // namespace rdma_exporter
