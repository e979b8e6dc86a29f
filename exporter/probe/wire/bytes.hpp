#pragma once

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "exporter/probe/wire/protocol.hpp"

// Big-endian writing and bounds-checked reading of the probe's wire formats
// (the control messages and the UD datagram); for wire/ only.
namespace rdma_exporter::probe::wire {

// A message or datagram that breaks its format: EPROTO and what was wrong.
inline Error protocol_error(const std::string& what) {
  return Error{EPROTO, what};
}

class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(v); }
  void u16(uint16_t v) {
    u8(static_cast<uint8_t>(v >> 8));
    u8(static_cast<uint8_t>(v));
  }
  void u32(uint32_t v) {
    u16(static_cast<uint16_t>(v >> 16));
    u16(static_cast<uint16_t>(v));
  }
  void u64(uint64_t v) {
    u32(static_cast<uint32_t>(v >> 32));
    u32(static_cast<uint32_t>(v));
  }
  void bytes(std::span<const uint8_t> b) { out_.insert(out_.end(), b.begin(), b.end()); }
  // A length byte and at most kMaxNameSize bytes.
  void name(const std::string& v) {
    const std::size_t n = std::min(v.size(), kMaxNameSize);
    u8(static_cast<uint8_t>(n));
    out_.insert(out_.end(), v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n));
  }
  void peer(const Peer& p) {
    u32(p.qpn);
    u32(p.psn);
    u16(p.lid);
    bytes(p.gid);
    u32(p.rkey);
    u64(p.addr);
  }
  void ud_peer(const UdPeer& p) {
    u32(p.qpn);
    u32(p.qkey);
    u16(p.lid);
    bytes(p.gid);
  }
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  std::vector<uint8_t> out_;
};

// Reads fields from a payload. Fixed-size messages check their length
// beforehand; variable-size ones ask has() before every field.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}
  bool has(std::size_t n) const { return b_.size() - pos_ >= n; }
  bool done() const { return pos_ == b_.size(); }
  uint8_t u8() { return b_[pos_++]; }
  uint16_t u16() {
    const uint16_t hi = u8();
    return static_cast<uint16_t>(hi << 8 | u8());
  }
  uint32_t u32() {
    const uint32_t hi = u16();
    return hi << 16 | u16();
  }
  uint64_t u64() {
    const uint64_t hi = u32();
    return hi << 32 | u32();
  }
  template <std::size_t N>
  std::array<uint8_t, N> array() {
    std::array<uint8_t, N> a{};
    std::copy_n(b_.begin() + static_cast<std::ptrdiff_t>(pos_), N, a.begin());
    pos_ += N;
    return a;
  }
  Peer peer() {
    Peer p;
    p.qpn = u32();
    p.psn = u32();
    p.lid = u16();
    p.gid = array<16>();
    p.rkey = u32();
    p.addr = u64();
    return p;
  }
  UdPeer ud_peer() {
    UdPeer p;
    p.qpn = u32();
    p.qkey = u32();
    p.lid = u16();
    p.gid = array<16>();
    return p;
  }
  std::span<const uint8_t> rest() const { return b_.subspan(pos_); }
  // A length byte and that many printable ASCII bytes; false when the
  // payload ends first, the length is above kMaxNameSize or a byte is not
  // printable.
  bool name(std::string& out) {
    if (!has(1)) return false;
    const std::size_t n = u8();
    if (n > kMaxNameSize || !has(n)) return false;
    out.clear();
    for (std::size_t i = 0; i < n; ++i) {
      const uint8_t c = u8();
      if (c < 0x20 || c >= 0x7f) return false;
      out.push_back(static_cast<char>(c));
    }
    return true;
  }

 private:
  std::span<const uint8_t> b_;
  std::size_t pos_ = 0;
};

}  // namespace rdma_exporter::probe::wire
