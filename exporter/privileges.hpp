#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exporter/config.hpp"

namespace rdma_exporter {

// Reads what this process may do (Privileges, collectors/registry.hpp): the
// effective capabilities and the pid namespace of this process
// (`proc_root` is /proc, or a test fixture), and whether a verbs device node
// below `dev_root` is accessible.
Privileges read_privileges(const std::string& proc_root = "/proc",
                           const std::string& dev_root = "/dev/infiniband");

// One line for each configured feature that cannot work with `have`: the
// exporter logs them once at start-up and runs what it can.
std::vector<std::string> privilege_problems(const Config& config, const Privileges& have);

}  // namespace rdma_exporter
