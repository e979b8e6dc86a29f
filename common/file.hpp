#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace rdma_exporter {

// The whole content of a file of at most `max_bytes`. A larger file is an
// error (EFBIG) that names the limit, never a partial read or an unbounded
// allocation; an unreadable one carries its errno. `what` prefixes every
// message ("probe.secret_file /etc/x").
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
