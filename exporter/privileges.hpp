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
  bool verbs_device = true;  // some /dev/infiniband/uverbsN opens read-write
};

// Reads the effective capabilities and the pid namespace of this process
// (`proc_root` is /proc, or a test fixture), and whether a verbs device node
// below `dev_root` is accessible.
Privileges read_privileges(const std::string& proc_root = "/proc",
                           const std::string& dev_root = "/dev/infiniband");

// One line for each configured feature that cannot work with `have`: the
// exporter logs them once at start-up and runs what it can.
std::vector<std::string> privilege_problems(const Config& config, const Privileges& have);

}  // namespace rdma_exporter
