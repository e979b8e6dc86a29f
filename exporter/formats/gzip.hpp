#pragma once

// gzip content encoding, for /metrics and for OTLP payloads.

#include <string>
#include <string_view>

namespace rdma_exporter {

// A gzip member (RFC 1952) holding `data`.
std::string gzip_compress(std::string_view data);

}  // namespace rdma_exporter
