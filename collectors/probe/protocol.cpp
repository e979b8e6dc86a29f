#include "collectors/probe/protocol.hpp"

#include <algorithm>

namespace rdma_exporter::probe {

namespace wire {
namespace {

constexpr std::size_t kPeerSize = 4 + 4 + 2 + 16 + 4 + 8;
constexpr std::size_t kHelloSize = kNonceSize + 1;
constexpr std::size_t kSetupSize = 1 + 4 + 1 + 1 + 2 + kPeerSize + kMacSize;
constexpr std::size_t kAcceptSize = kPeerSize;

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
  void peer(const Peer& p) {
    u32(p.qpn);
    u32(p.psn);
    u16(p.lid);
    bytes(p.gid);
    u32(p.rkey);
    u64(p.addr);
  }
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  std::vector<uint8_t> out_;
};

// Reads fields from a payload whose length was checked beforehand.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}
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
  std::span<const uint8_t> rest() const { return b_.subspan(pos_); }

 private:
  std::span<const uint8_t> b_;
  std::size_t pos_ = 0;
};

Error protocol_error(const std::string& what) {
  return Error{EPROTO, what};
}

void write_setup_fields(Writer& w, const Setup& s) {
  w.u8(static_cast<uint8_t>(s.op));
  w.u32(s.size);
  w.u8(s.tclass);
  w.u8(s.sl);
  w.u16(static_cast<uint16_t>(s.mtu));
  w.peer(s.peer);
}

std::vector<uint8_t> payload_of(const Message& m) {
  Writer w;
  if (const auto* h = std::get_if<Hello>(&m)) {
    w.bytes(h->nonce);
    w.u8(h->auth_required ? 1 : 0);
  } else if (const auto* s = std::get_if<Setup>(&m)) {
    write_setup_fields(w, *s);
    w.bytes(s->mac);
  } else if (const auto* a = std::get_if<Accept>(&m)) {
    w.peer(a->peer);
  } else if (const auto* r = std::get_if<Reject>(&m)) {
    w.u8(static_cast<uint8_t>(r->code));
    const std::size_t n = std::min(r->reason.size(), kMaxReasonSize);
    for (std::size_t i = 0; i < n; ++i) {
      const auto c = static_cast<uint8_t>(r->reason[i]);
      w.u8(c >= 0x20 && c < 0x7f ? c : '?');
    }
  }
  return w.take();
}

Type type_of(const Message& m) {
  return static_cast<Type>(m.index() + 1);
}

bool peer_valid(const Peer& p, std::string& why) {
  if (p.qpn == 0 || p.qpn > 0xffffff) {
    why = "queue pair number out of range";
    return false;
  }
  if (p.psn > 0xffffff) {
    why = "packet sequence number out of range";
    return false;
  }
  return true;
}

Result<Message> expect_size(Type type, std::size_t got, std::size_t want) {
  return protocol_error("message type " + std::to_string(static_cast<int>(type)) + " has " +
                        std::to_string(got) + " bytes of payload, expected " +
                        std::to_string(want));
}

}  // namespace

const char* reject_code_name(RejectCode code) {
  switch (code) {
    case RejectCode::version:
      return "version";
    case RejectCode::auth:
      return "auth";
    case RejectCode::capacity:
      return "capacity";
    case RejectCode::rate:
      return "rate";
    case RejectCode::unsupported:
      return "unsupported";
    case RejectCode::resources:
      return "resources";
    case RejectCode::protocol:
      return "protocol";
  }
  return "unknown";
}

bool mtu_valid(uint32_t bytes) {
  return bytes == 256 || bytes == 512 || bytes == 1024 || bytes == 2048 || bytes == 4096;
}

std::vector<uint8_t> encode(const Message& message) {
  const std::vector<uint8_t> payload = payload_of(message);
  Writer w;
  w.u8('R');
  w.u8('X');
  w.u8('P');
  w.u8(kVersion);
  w.u8(static_cast<uint8_t>(type_of(message)));
  w.u8(0);
  w.u16(static_cast<uint16_t>(payload.size()));
  w.bytes(payload);
  return w.take();
}

std::vector<uint8_t> setup_mac_input(const Setup& setup) {
  Writer w;
  write_setup_fields(w, setup);
  return w.take();
}

Result<Header> decode_header(std::span<const uint8_t> bytes) {
  if (bytes.size() < kHeaderSize) return protocol_error("truncated header");
  if (bytes[0] != 'R' || bytes[1] != 'X' || bytes[2] != 'P') {
    return protocol_error("not a probe control message (bad magic)");
  }
  if (bytes[3] != kVersion) {
    return Error{EPROTONOSUPPORT, "protocol version " + std::to_string(bytes[3]) +
                                      " not spoken (this is " + std::to_string(kVersion) + ")"};
  }
  const uint8_t type = bytes[4];
  if (type < static_cast<uint8_t>(Type::hello) || type > static_cast<uint8_t>(Type::keepalive)) {
    return protocol_error("unknown message type " + std::to_string(type));
  }
  if (bytes[5] != 0) return protocol_error("reserved header byte is not zero");
  const auto length = static_cast<uint16_t>(bytes[6] << 8 | bytes[7]);
  if (length > kMaxPayload) {
    return protocol_error("payload of " + std::to_string(length) + " bytes exceeds " +
                          std::to_string(kMaxPayload));
  }
  return Header{static_cast<Type>(type), length};
}

Result<Message> decode_payload(Type type, std::span<const uint8_t> payload) {
  Reader r(payload);
  std::string why;
  switch (type) {
    case Type::hello: {
      if (payload.size() != kHelloSize) return expect_size(type, payload.size(), kHelloSize);
      Hello h;
      h.nonce = r.array<kNonceSize>();
      const uint8_t flags = r.u8();
      if (flags > 1) return protocol_error("hello: unknown flags");
      h.auth_required = flags == 1;
      return Message{h};
    }
    case Type::setup: {
      if (payload.size() != kSetupSize) return expect_size(type, payload.size(), kSetupSize);
      Setup s;
      const uint8_t op = r.u8();
      if (op < static_cast<uint8_t>(Op::send) || op > static_cast<uint8_t>(Op::read)) {
        return protocol_error("setup: unknown operation " + std::to_string(op));
      }
      s.op = static_cast<Op>(op);
      s.size = r.u32();
      if (s.size == 0) return protocol_error("setup: message size 0");
      s.tclass = r.u8();
      s.sl = r.u8();
      if (s.sl > 15) return protocol_error("setup: service level above 15");
      s.mtu = r.u16();
      if (!mtu_valid(s.mtu)) return protocol_error("setup: MTU " + std::to_string(s.mtu));
      s.peer = r.peer();
      if (!peer_valid(s.peer, why)) return protocol_error("setup: " + why);
      s.mac = r.array<kMacSize>();
      return Message{s};
    }
    case Type::accept: {
      if (payload.size() != kAcceptSize) return expect_size(type, payload.size(), kAcceptSize);
      Accept a;
      a.peer = r.peer();
      if (!peer_valid(a.peer, why)) return protocol_error("accept: " + why);
      return Message{a};
    }
    case Type::reject: {
      if (payload.empty() || payload.size() > 1 + kMaxReasonSize) {
        return protocol_error("reject: payload of " + std::to_string(payload.size()) + " bytes");
      }
      Reject j;
      const uint8_t code = r.u8();
      if (code < static_cast<uint8_t>(RejectCode::version) ||
          code > static_cast<uint8_t>(RejectCode::protocol)) {
        return protocol_error("reject: unknown code " + std::to_string(code));
      }
      j.code = static_cast<RejectCode>(code);
      for (uint8_t c : r.rest()) {
        if (c < 0x20 || c >= 0x7f) return protocol_error("reject: reason is not printable ASCII");
        j.reason.push_back(static_cast<char>(c));
      }
      return Message{j};
    }
    case Type::keepalive:
      if (!payload.empty()) return expect_size(type, payload.size(), 0);
      return Message{Keepalive{}};
  }
  return protocol_error("unknown message type");
}

Result<Message> decode(std::span<const uint8_t> bytes) {
  auto header = decode_header(bytes);
  if (!header) return header.error();
  if (bytes.size() != kHeaderSize + header->length) {
    return protocol_error("message of " + std::to_string(bytes.size()) + " bytes, header says " +
                          std::to_string(kHeaderSize + header->length));
  }
  return decode_payload(header->type, bytes.subspan(kHeaderSize));
}

}  // namespace wire
}  // namespace rdma_exporter::probe
