#pragma once

#include <array>
#include <cstring>
#include <string>

namespace rdma_exporter {

// The message of errno value `err` ("No such file or directory"), safe to
// call from any thread, unlike std::strerror, whose buffer is shared.
inline std::string errno_text(int err) {
  std::array<char, 256> buffer{};
  // glibc's GNU strerror_r (g++ and clang++ define _GNU_SOURCE for
  // libstdc++): it returns the message, in `buffer` or a static string.
  return ::strerror_r(err, buffer.data(), buffer.size());
}

}  // namespace rdma_exporter
