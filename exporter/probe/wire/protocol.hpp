#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "common/result.hpp"
#include "exporter/probe/wire/qp_params.hpp"

// The probe's control protocol: what a prober and a responder say over TCP to
// connect a pair of RC queue pairs. Every message is an 8-byte header
//   'R' 'X' 'P' version  type  0  length(16, big endian)
// and a payload of exactly the length its type has. Integers are big endian.
// The decoder accepts nothing else: a wrong magic, version, type, length or
// field value is an error naming what was wrong.
namespace rdma_exporter::probe::wire {

inline constexpr uint8_t kVersion = 4;
inline constexpr std::size_t kHeaderSize = 8;
// A hello of kMaxPorts ports with names and rails of kMaxNameSize bytes
// takes 4,754 bytes.
inline constexpr std::size_t kMaxPayload = 8192;
inline constexpr std::size_t kNonceSize = 16;
inline constexpr std::size_t kMacSize = 32;
// Secrets a responder accepts at once: the current one and, while a
// rotation's grace period lasts, the previous one.
inline constexpr std::size_t kMaxKeys = 2;
inline constexpr std::size_t kMaxReasonSize = 200;
// Device names and rail labels: printable ASCII, 1 to 64 bytes (a rail may
// be empty in a setup, where it means "the device named").
inline constexpr std::size_t kMaxNameSize = 64;
// Ports a hello lists at most.
inline constexpr std::size_t kMaxPorts = 32;

enum class Type : uint8_t {
  hello = 1,
  setup = 2,
  accept = 3,
  reject = 4,
  keepalive = 5,
  ud_setup = 6,
  ud_accept = 7,
};

// What one side of an RC connection needs to know of the other.
struct Peer {
  uint32_t qpn = 0;  // 24 bits
  uint32_t psn = 0;  // 24 bits
  uint16_t lid = 0;
  std::array<uint8_t, 16> gid{};
  uint32_t rkey = 0;
  uint64_t addr = 0;

  bool operator==(const Peer&) const = default;
};

// One RDMA port a responder answers on: its device, port number, link
// layer, the GID its queue pairs use and the rail it is on.
struct PortAd {
  std::string device;
  uint8_t port = 1;
  bool ethernet = true;
  std::array<uint8_t, 16> gid{};
  std::string rail;

  bool operator==(const PortAd&) const = default;
};

using Mac = std::array<uint8_t, kMacSize>;

// Responder -> prober, first thing on a connection: a nonce for the setup's
// MAC, how many secrets it accepts (0: no authentication; nothing derived
// from a secret is sent before a set-up proves one) and the ports the
// responder answers on (at most kMaxPorts). A prober may read the hello and
// leave: that is how targets' ports are discovered.
struct Hello {
  std::array<uint8_t, kNonceSize> nonce{};
  uint8_t keys = 0;  // at most kMaxKeys
  std::vector<PortAd> ports;

  bool auth_required() const { return keys > 0; }
  bool operator==(const Hello&) const = default;
};

// The control address a prober connected to, as it saw it: an IPv6 address
// (IPv4 as IPv4-mapped) and the TCP port. The MAC binds a set-up to it, so
// a set-up relayed to another responder is refused there.
struct Dialled {
  std::array<uint8_t, 16> address{};
  uint16_t port = 0;

  bool operator==(const Dialled&) const = default;
};

// Prober -> responder: the probe class's queue pair parameters, the
// prober's queue pair and which port of the responder it wants: the one
// named by device and port, or, with an empty device, the responder's first
// port on `rail`; the prober's own nonce and the address it dialled. `macs`
// are the HMACs of the hello's nonce and this message, one per secret the
// prober holds (its current one first, then the one a rotation's grace
// keeps; at most kMaxKeys); none without a secret.
struct Setup : QpParams {
  Peer peer;
  std::string device;
  uint8_t port = 1;
  std::string rail;
  std::array<uint8_t, kNonceSize> nonce{};
  Dialled dialled;
  std::vector<Mac> macs;

  bool operator==(const Setup&) const = default;
};

// Responder -> prober: its queue pair, ready to receive. `mac` proves the
// responder holds the secret: the HMAC of the set-up's MAC that it verified
// and this message (zero without a secret).
struct Accept {
  Peer peer;
  Mac mac{};

  bool operator==(const Accept&) const = default;
};

enum class RejectCode : uint8_t {
  version = 1,      // protocol version not spoken
  auth = 2,         // missing or wrong HMAC
  capacity = 3,     // session cap reached
  rate = 4,         // too many set-ups from this source
  unsupported = 5,  // operation, size or MTU not offered
  resources = 6,    // the responder could not create its queue pair
  protocol = 7,     // malformed or unexpected message
};
const char* reject_code_name(RejectCode code);

struct Reject {
  RejectCode code = RejectCode::protocol;
  std::string reason;  // printable ASCII, at most kMaxReasonSize bytes

  bool operator==(const Reject&) const = default;
};

// Either side, while a session is idle: says the connection is still wanted.
struct Keepalive {
  bool operator==(const Keepalive&) const = default;
};

// A port's UD queue pair as a peer addresses it: queue pair number, Q_Key,
// LID and GID.
struct UdPeer {
  uint32_t qpn = 0;  // 24 bits
  uint32_t qkey = 0;
  uint16_t lid = 0;
  std::array<uint8_t, 16> gid{};

  bool operator==(const UdPeer&) const = default;
};

// Prober -> responder, instead of a setup, for the UD class (op ud): the
// class's size, traffic class, service level and MTU, the prober port's UD
// queue pair, and the responder port wanted (as in a setup). An accepted
// prober is admitted: the responder's UD queue pair answers its datagrams
// for as long as the connection stays open.
struct UdSetup : QpParams {
  UdPeer peer;
  // How often the class sends, in milliseconds (1 to kMaxUdInterval): the
  // responder answers the session at about that rate.
  uint32_t interval_ms = 1000;
  std::string device;
  uint8_t port = 1;
  std::string rail;
  std::array<uint8_t, kNonceSize> nonce{};
  Dialled dialled;
  std::vector<Mac> macs;  // as in a Setup

  UdSetup() { op = Op::ud; }
  bool operator==(const UdSetup&) const = default;
};

inline constexpr uint32_t kMaxUdIntervalMs = 3'600'000;

// Responder -> prober: the UD queue pair of the port that answers, with a
// MAC as in an accept.
struct UdAccept {
  UdPeer peer;
  Mac mac{};

  bool operator==(const UdAccept&) const = default;
};

// The variant's order is the message types' order.
using Message = std::variant<Hello, Setup, Accept, Reject, Keepalive, UdSetup, UdAccept>;

struct Header {
  Type type = Type::keepalive;
  uint16_t length = 0;
};

std::vector<uint8_t> encode(const Message& message);

// The bytes a MAC covers: the message's type and its payload without the
// MAC.
std::vector<uint8_t> mac_input(const Setup& setup);
std::vector<uint8_t> mac_input(const UdSetup& setup);
std::vector<uint8_t> mac_input(const Accept& accept);
std::vector<uint8_t> mac_input(const UdAccept& accept);

Result<Header> decode_header(std::span<const uint8_t> bytes);
Result<Message> decode_payload(Type type, std::span<const uint8_t> payload);
// A whole message (header and payload) in one buffer.
Result<Message> decode(std::span<const uint8_t> bytes);

// Path MTU in bytes <-> the verbs enum value (1..5).
bool mtu_valid(uint32_t bytes);

}  // namespace rdma_exporter::probe::wire
