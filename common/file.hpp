#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace rdma_exporter {

// The whole content of a regular file of at most `max_bytes`. Opening never
// waits (O_NONBLOCK) and never takes a controlling terminal; what is open is
// then checked on the descriptor: a FIFO, a device, a directory or a socket
// is refused (EINVAL: "is a FIFO, not a regular file"), and so is a file
// larger than the limit, by its size before any read and by what a read
// gives (EFBIG), never a partial read or an unbounded allocation. An
// unreadable file carries its errno. `what` prefixes every message
// ("probe.secret_file /etc/x").
Result<std::string> read_file(const std::string& path, std::size_t max_bytes,
                              const std::string& what);

// Writes `data` to `path` atomically: a temporary file in the same folder,
// flushed to disk, then renamed over `path`. Readers see the old file or the
// new one, never a part. The error names the step and the file that failed.
Status write_file_atomically(const std::string& path, std::string_view data);

// Limits for the files the daemon reads: configuration files (the exporter's
// and the web configuration), certificates and target lists.
inline constexpr std::size_t kMaxConfigFileBytes = 16u << 20;

}  // namespace rdma_exporter
