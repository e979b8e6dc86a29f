#include "exporter/probe/wire/protocol.hpp"

#include <algorithm>
#include <string>
#include <type_traits>
#include <variant>

#include "exporter/probe/wire/bytes.hpp"
#include "exporter/probe/wire/datagram.hpp"

namespace rdma_exporter::probe {

namespace wire {
namespace {

constexpr std::size_t kPeerSize = 4 + 4 + 2 + 16 + 4 + 8;
constexpr std::size_t kUdPeerSize = 4 + 4 + 2 + 16;
constexpr std::size_t kAcceptSize = kPeerSize + kMacSize;
constexpr std::size_t kUdAcceptSize = kUdPeerSize + kMacSize;
constexpr uint8_t kLinkEthernet = 1;
constexpr uint8_t kMaxServiceLevel = 15;
constexpr uint8_t kLinkInfiniband = 2;

void write_setup_fields(Writer& w, const Setup& s) {
  w.u8(static_cast<uint8_t>(s.op));
  w.u32(s.size);
  w.u8(s.tclass);
  w.u8(s.sl);
  w.u16(static_cast<uint16_t>(s.mtu));
  w.peer(s.peer);
  w.name(s.device);
  w.u8(s.port);
  w.name(s.rail);
  w.bytes(s.nonce);
  w.bytes(s.dialled.address);
  w.u16(s.dialled.port);
}

void write_ud_setup_fields(Writer& w, const UdSetup& s) {
  w.u8(static_cast<uint8_t>(Op::ud));
  w.u32(s.size);
  w.u8(s.tclass);
  w.u8(s.sl);
  w.u16(static_cast<uint16_t>(s.mtu));
  w.ud_peer(s.peer);
  w.u32(s.interval_ms);
  w.name(s.device);
  w.u8(s.port);
  w.name(s.rail);
  w.bytes(s.nonce);
  w.bytes(s.dialled.address);
  w.u16(s.dialled.port);
}

// A set-up's MACs: their count, then each.
void write_macs(Writer& w, const std::vector<Mac>& macs) {
  const std::size_t n = std::min(macs.size(), kMaxKeys);
  w.u8(static_cast<uint8_t>(n));
  for (std::size_t i = 0; i < n; ++i) w.bytes(macs[i]);
}

std::vector<uint8_t> payload_of(const Message& m) {
  Writer w;
  if (const auto* h = std::get_if<Hello>(&m)) {
    w.bytes(h->nonce);
    w.u8(static_cast<uint8_t>(std::min<std::size_t>(h->keys, kMaxKeys)));
    const std::size_t n = std::min(h->ports.size(), kMaxPorts);
    w.u8(static_cast<uint8_t>(n));
    for (std::size_t i = 0; i < n; ++i) {
      const PortAd& p = h->ports[i];
      w.name(p.device);
      w.u8(p.port);
      w.u8(p.ethernet ? kLinkEthernet : kLinkInfiniband);
      w.bytes(p.gid);
      w.name(p.rail);
    }
  } else if (const auto* s = std::get_if<Setup>(&m)) {
    write_setup_fields(w, *s);
    write_macs(w, s->macs);
  } else if (const auto* a = std::get_if<Accept>(&m)) {
    w.peer(a->peer);
    w.bytes(a->mac);
  } else if (const auto* us = std::get_if<UdSetup>(&m)) {
    write_ud_setup_fields(w, *us);
    write_macs(w, us->macs);
  } else if (const auto* ua = std::get_if<UdAccept>(&m)) {
    w.ud_peer(ua->peer);
    w.bytes(ua->mac);
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

// A message's type is its alternative's place in Message, counted from 1:
// the order is checked here, so a reordered variant fails to compile.
template <Type T, typename M>
constexpr bool is_type_of =
    std::is_same_v<std::variant_alternative_t<static_cast<std::size_t>(T) - 1, Message>, M>;
static_assert(is_type_of<Type::hello, Hello> && is_type_of<Type::setup, Setup> &&
              is_type_of<Type::accept, Accept> && is_type_of<Type::reject, Reject> &&
              is_type_of<Type::keepalive, Keepalive> && is_type_of<Type::ud_setup, UdSetup> &&
              is_type_of<Type::ud_accept, UdAccept> &&
              std::variant_size_v<Message> == static_cast<std::size_t>(Type::ud_accept));

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

bool ud_peer_valid(const UdPeer& p, std::string& why) {
  // QPN 1 is the GSI queue pair, which never answers probes.
  if (p.qpn <= 1 || p.qpn > 0xffffff) {
    why = "queue pair number out of range";
    return false;
  }
  // Q_Keys with the high bit set are for privileged queue pairs.
  if ((p.qkey & 0x80000000u) != 0) {
    why = "controlled Q_Key (high bit set)";
    return false;
  }
  return true;
}

// The class fields both setups start with: op, size, traffic class, service
// level, MTU.
bool read_class(Reader& r, QpParams& q, const char* what, std::string& why) {
  const uint8_t op = r.u8();
  if (find_op(static_cast<Op>(op)) == nullptr) {
    why = std::string(what) + ": unknown operation " + std::to_string(op);
    return false;
  }
  q.op = static_cast<Op>(op);
  q.size = r.u32();
  if (q.size == 0) {
    why = std::string(what) + ": message size 0";
    return false;
  }
  q.tclass = r.u8();
  q.sl = r.u8();
  if (q.sl > kMaxServiceLevel) {
    why = std::string(what) + ": service level above " + std::to_string(kMaxServiceLevel);
    return false;
  }
  q.mtu = r.u16();
  if (!mtu_valid(q.mtu)) {
    why = std::string(what) + ": MTU " + std::to_string(q.mtu);
    return false;
  }
  return true;
}

// The fields both setups end with: the target port (device, port, rail),
// the prober's nonce, the address it dialled and the MACs.
template <typename S>
Result<Message> read_target(Reader& r, S s, const char* what) {
  const std::string w(what);
  if (!r.name(s.device)) return protocol_error(w + ": bad device name");
  if (!r.has(1)) return protocol_error(w + ": truncated");
  s.port = r.u8();
  if (!r.name(s.rail)) return protocol_error(w + ": bad rail");
  if (s.device.empty() && s.rail.empty()) {
    return protocol_error(w + ": names neither a device nor a rail");
  }
  if (!s.device.empty() && s.port == 0) return protocol_error(w + ": port number 0");
  if (!r.has(kNonceSize + 16 + 2 + 1)) return protocol_error(w + ": truncated");
  s.nonce = r.array<kNonceSize>();
  s.dialled.address = r.array<16>();
  s.dialled.port = r.u16();
  const std::size_t macs = r.u8();
  if (macs > kMaxKeys) {
    return protocol_error(w + ": more than " + std::to_string(kMaxKeys) + " MACs");
  }
  if (!r.has(macs * kMacSize)) return protocol_error(w + ": truncated");
  for (std::size_t i = 0; i < macs; ++i) s.macs.push_back(r.array<kMacSize>());
  if (!r.done()) return protocol_error(w + ": bytes after the MACs");
  return Message{std::move(s)};
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

std::vector<uint8_t> mac_input(const Setup& setup) {
  Writer w;
  w.u8(static_cast<uint8_t>(Type::setup));
  write_setup_fields(w, setup);
  return w.take();
}

std::vector<uint8_t> mac_input(const UdSetup& setup) {
  Writer w;
  w.u8(static_cast<uint8_t>(Type::ud_setup));
  write_ud_setup_fields(w, setup);
  return w.take();
}

std::vector<uint8_t> mac_input(const Accept& accept) {
  Writer w;
  w.u8(static_cast<uint8_t>(Type::accept));
  w.peer(accept.peer);
  return w.take();
}

std::vector<uint8_t> mac_input(const UdAccept& accept) {
  Writer w;
  w.u8(static_cast<uint8_t>(Type::ud_accept));
  w.ud_peer(accept.peer);
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
  if (type < static_cast<uint8_t>(Type::hello) || type > static_cast<uint8_t>(Type::ud_accept)) {
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

namespace {

// The hello: nonce, how many secrets, then each port.
Result<Message> decode_hello(Reader& r) {
  Hello h;
  if (!r.has(kNonceSize + 2)) return protocol_error("hello: truncated");
  h.nonce = r.array<kNonceSize>();
  h.keys = r.u8();
  if (h.keys > kMaxKeys) {
    return protocol_error("hello: more than " + std::to_string(kMaxKeys) + " secrets");
  }
  const std::size_t n = r.u8();
  if (n > kMaxPorts) {
    return protocol_error("hello: more than " + std::to_string(kMaxPorts) + " ports");
  }
  for (std::size_t i = 0; i < n; ++i) {
    PortAd p;
    const std::string where = "hello: port " + std::to_string(i) + ": ";
    if (!r.name(p.device) || p.device.empty()) return protocol_error(where + "bad device name");
    if (!r.has(2 + 16)) return protocol_error(where + "truncated");
    p.port = r.u8();
    if (p.port == 0) return protocol_error(where + "port number 0");
    const uint8_t link = r.u8();
    if (link != kLinkEthernet && link != kLinkInfiniband) {
      return protocol_error(where + "unknown link layer " + std::to_string(link));
    }
    p.ethernet = link == kLinkEthernet;
    p.gid = r.array<16>();
    if (!r.name(p.rail) || p.rail.empty()) return protocol_error(where + "bad rail");
    h.ports.push_back(std::move(p));
  }
  if (!r.done()) return protocol_error("hello: bytes after the last port");
  return Message{h};
}

}  // namespace

Result<Message> decode_payload(Type type, std::span<const uint8_t> payload) {
  Reader r(payload);
  std::string why;
  switch (type) {
    case Type::hello:
      return decode_hello(r);
    case Type::setup: {
      Setup s;
      if (!r.has(1 + 4 + 1 + 1 + 2 + kPeerSize)) return protocol_error("setup: truncated");
      if (!read_class(r, s, "setup", why)) return protocol_error(why);
      if (is_ud(s.op)) return protocol_error("setup: operation ud needs a ud_setup");
      s.peer = r.peer();
      if (!peer_valid(s.peer, why)) return protocol_error("setup: " + why);
      return read_target(r, std::move(s), "setup");
    }
    case Type::ud_setup: {
      UdSetup s;
      if (!r.has(1 + 4 + 1 + 1 + 2 + kUdPeerSize + 4)) {
        return protocol_error("ud_setup: truncated");
      }
      if (!read_class(r, s, "ud_setup", why)) return protocol_error(why);
      if (!is_ud(s.op)) return protocol_error("ud_setup: operation is not ud");
      if (s.size < kDatagramSize || s.size > s.mtu) {
        return protocol_error("ud_setup: datagram size " + std::to_string(s.size) +
                              " outside 32 to the MTU");
      }
      s.peer = r.ud_peer();
      if (!ud_peer_valid(s.peer, why)) return protocol_error("ud_setup: " + why);
      s.interval_ms = r.u32();
      if (s.interval_ms == 0 || s.interval_ms > kMaxUdIntervalMs) {
        return protocol_error("ud_setup: interval of " + std::to_string(s.interval_ms) +
                              " ms outside 1 ms to 1 h");
      }
      return read_target(r, std::move(s), "ud_setup");
    }
    case Type::ud_accept: {
      if (payload.size() != kUdAcceptSize) {
        return expect_size(type, payload.size(), kUdAcceptSize);
      }
      UdAccept a;
      a.peer = r.ud_peer();
      a.mac = r.array<kMacSize>();
      if (!ud_peer_valid(a.peer, why)) return protocol_error("ud_accept: " + why);
      return Message{a};
    }
    case Type::accept: {
      if (payload.size() != kAcceptSize) return expect_size(type, payload.size(), kAcceptSize);
      Accept a;
      a.peer = r.peer();
      a.mac = r.array<kMacSize>();
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
