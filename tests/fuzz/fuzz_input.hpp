#pragma once

// How the harnesses read their bytes. A netlink reply is a sequence of
// datagrams, each a 16-bit little-endian length and that many bytes (the
// last one takes what is left when the length runs past the end). The
// corpus generator (make_corpus.cpp) writes replies the same way.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/kernel/netlink/transport.hpp"

namespace rdma_exporter::fuzz {

// More datagrams than this in one reply add nothing a fuzzer can find.
inline constexpr std::size_t kMaxDatagrams = 64;

inline netlink::Reply reply_from(std::span<const uint8_t> bytes) {
  netlink::Reply reply;
  while (bytes.size() >= 2 && reply.datagrams.size() < kMaxDatagrams) {
    const std::size_t length = bytes[0] | (static_cast<std::size_t>(bytes[1]) << 8);
    bytes = bytes.subspan(2);
    const std::size_t take = std::min(length, bytes.size());
    reply.datagrams.emplace_back(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(take));
    bytes = bytes.subspan(take);
  }
  return reply;
}

inline std::vector<uint8_t> reply_bytes(const netlink::Reply& reply) {
  std::vector<uint8_t> out;
  for (const auto& d : reply.datagrams) {
    out.push_back(static_cast<uint8_t>(d.size() & 0xff));
    out.push_back(static_cast<uint8_t>(d.size() >> 8));
    out.insert(out.end(), d.begin(), d.end());
  }
  return out;
}

inline std::span<const uint8_t> bytes_of(const uint8_t* data, std::size_t size) {
  return size == 0 ? std::span<const uint8_t>{} : std::span<const uint8_t>(data, size);
}

inline std::string text_of(std::span<const uint8_t> bytes) {
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace rdma_exporter::fuzz
