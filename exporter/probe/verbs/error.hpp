#pragma once

#include <cerrno>
#include <string>

#include "common/result.hpp"

namespace rdma_exporter::probe {

// A failed libibverbs call as an Error: libibverbs returns the error number
// itself or sets errno (`err` is then errno, or 0 when it left none).
inline Error verbs_error(int err, const std::string& what) {
  return Error::system(err != 0 ? err : EIO, what);
}

}  // namespace rdma_exporter::probe
