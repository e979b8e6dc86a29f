#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exporter/config.hpp"

namespace rdma_exporter {

// What this process may do, read from /proc.
struct Privileges {
  bool cap_net_admin = false;  // effective CAP_NET_ADMIN
  bool host_pid_namespace = true;
};

// Reads the effective capabilities and the pid namespace of this process
// (`proc_root` is /proc, or a test fixture).
Privileges read_privileges(const std::string& proc_root = "/proc");

// One line for each configured feature that cannot work with `have`: the
// exporter logs them once at start-up and runs what it can.
std::vector<std::string> privilege_problems(const Config& config, const Privileges& have);

}  // namespace rdma_exporter
