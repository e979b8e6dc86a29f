#pragma once

// gzip content encoding, for /metrics and for OTLP payloads.

#include <string>
#include <string_view>

namespace rdma_exporter {

// zlib's levels 1 to 3 find matches without lazy evaluation: on an
// exposition (long runs of the same names and labels) level 1 compresses
// about as well as level 3 (a 16-port exposition of 77 KB: 9.3 KB at level
// 1, 9.6 KB at level 3, 8.1 KB at the default level 6) in two thirds of
// level 3's time and a fourth of level 6's (docs/benchmarks.md). The
// exposition is compressed once per collection with it; OTLP payloads with
// zlib's default.
inline constexpr int kExpositionGzipLevel = 1;

// A gzip member (RFC 1952) holding `data`; `level` as zlib's, -1 its default.
// Each thread keeps a deflate stream for the level it used last and resets
// it for the next member instead of setting one up anew.
std::string gzip_compress(std::string_view data, int level = -1);

}  // namespace rdma_exporter
