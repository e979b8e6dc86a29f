#pragma once

#include <cstdint>
#include <span>

#include "common/result.hpp"

namespace rdma_exporter::probe::wire {

// The UD probe's datagram, sent by a prober's UD queue pair and echoed by
// the responder's, 32 bytes and then padding to the class's size:
//   'R' 'X' 'U' version(1)  kind  flags  path  tclass
//   session(32)  seq(64)  responder delay in ns(64)  reserved(32, zero)
// A request has no flags and a delay of 0. A reply is the request with kind
// reply, the responder's delay between receiving the request and posting the
// reply (T4 - T3), and flags saying which clock measured it and whether the
// responder's event loop stalled while the request waited.
inline constexpr uint8_t kDatagramVersion = 1;
inline constexpr std::size_t kDatagramSize = 32;
// The largest delay a reply may report: 10 s.
inline constexpr uint64_t kMaxResponderDelayNs = 10'000'000'000ull;

enum class DatagramKind : uint8_t { request = 1, reply = 2 };
// Reply flags.
inline constexpr uint8_t kDelayDeviceClock = 1;  // T3 and T4 are device clock readings
inline constexpr uint8_t kResponderStalled = 2;  // answered late: the responder stalled

struct Datagram {
  DatagramKind kind = DatagramKind::request;
  uint8_t flags = 0;
  uint8_t path = 0;  // which of the prober's flow labels carried the request
  uint8_t tclass = 0;
  uint32_t session = 0;  // the prober's number for the pair
  uint64_t seq = 0;
  uint64_t responder_delay_ns = 0;

  bool operator==(const Datagram&) const = default;
};

// Writes the 32-byte header into `out` (at least kDatagramSize bytes).
void encode_datagram(const Datagram& d, std::span<uint8_t> out);
// The largest datagram read: 64 KiB.
inline constexpr std::size_t kMaxDatagramBytes = 65536;
// Reads a received datagram (header and padding, at most kMaxDatagramBytes).
Result<Datagram> decode_datagram(std::span<const uint8_t> bytes);

}  // namespace rdma_exporter::probe::wire
