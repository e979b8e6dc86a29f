#pragma once

// gzip content encoding, for /metrics and for OTLP payloads.

#include <string>
#include <string_view>

namespace rdma_exporter {

// zlib's levels 1 to 3 find matches without lazy evaluation: on an
// exposition (long runs of the same names and labels) level 3 compresses
// about as well as the default level 6 in a fraction of the time
// (docs/benchmarks.md). The exposition is compressed once per collection
// with it; OTLP payloads with zlib's default.
inline constexpr int kExpositionGzipLevel = 3;

// A gzip member (RFC 1952) holding `data`; `level` as zlib's, -1 its default.
std::string gzip_compress(std::string_view data, int level = -1);

}  // namespace rdma_exporter
