#include "common/host_name.hpp"

#include <unistd.h>

#include <array>

namespace rdma_exporter {

std::string host_name() {
  // HOST_NAME_MAX is 64 on Linux; the last byte stays 0 if a name is cut.
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) return "";
  return name.data();
}

}  // namespace rdma_exporter
