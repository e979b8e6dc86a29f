#include <gtest/gtest.h>

#include <algorithm>

#include "collectors/probe/auth.hpp"
#include "collectors/probe/options.hpp"
#include "collectors/probe/protocol.hpp"
#include "collectors/probe/verbs_endpoint.hpp"

namespace rdma_exporter::probe {
namespace {

// A setup for port 2 of mlx5_1 (no rail).
wire::Setup sample_setup() {
  wire::Setup s;
  s.op = Op::read;
  s.size = 4096;
  s.tclass = 106;
  s.sl = 3;
  s.mtu = 2048;
  s.peer.qpn = 0x123456;
  s.peer.psn = 0xabcdef;
  s.peer.lid = 7;
  for (std::size_t i = 0; i < 16; ++i) s.peer.gid[i] = static_cast<uint8_t>(i * 3);
  s.peer.rkey = 0xdeadbeef;
  s.peer.addr = 0x00007f0011223344ull;
  s.device = "mlx5_1";
  s.port = 2;
  s.mac.fill(0x5a);
  return s;
}

// Offsets in a setup's payload: op 0, size 1-4, tclass 5, sl 6, mtu 7-8,
// the peer 9-46 (qpn 9, psn 13, lid 17, gid 19, rkey 35, addr 39), then the
// device's length byte at 47.
constexpr std::size_t kSetupDevice = 47;

// A RoCE port with an IPv4-mapped GID (::ffff:192.168.100.7) and an
// InfiniBand port (fe80::2:c903:12:3456).
wire::Hello sample_hello() {
  wire::Hello h;
  for (std::size_t i = 0; i < 16; ++i) h.nonce[i] = static_cast<uint8_t>(i);
  wire::PortAd roce;
  roce.device = "mlx5_0";
  roce.port = 1;
  roce.ethernet = true;
  roce.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 100, 7};
  roce.rail = "192.168.100.0/24";
  wire::PortAd ib;
  ib.device = "mlx5_2";
  ib.port = 2;
  ib.ethernet = false;
  ib.gid = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0x12, 0x34, 0x56};
  ib.rail = "fe80::/64";
  h.ports = {roce, ib};
  return h;
}

// A message of `type` with `payload`, its header written here.
std::vector<uint8_t> frame(wire::Type type, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> out;
  out.reserve(wire::kHeaderSize + payload.size());
  for (uint8_t b :
       {uint8_t{'R'}, uint8_t{'X'}, uint8_t{'P'}, uint8_t{2}, static_cast<uint8_t>(type),
        uint8_t{0}, static_cast<uint8_t>(payload.size() >> 8),
        static_cast<uint8_t>(payload.size() & 0xff)}) {
    out.push_back(b);
  }
  for (uint8_t b : payload) out.push_back(b);
  return out;
}

std::vector<uint8_t> payload_of(const wire::Message& m) {
  const auto bytes = wire::encode(m);
  return {bytes.begin() + wire::kHeaderSize, bytes.end()};
}

// The decoder's complaint about `bytes`, "" when it accepts them.
std::string refusal(const std::vector<uint8_t>& bytes) {
  auto m = wire::decode(bytes);
  return m ? "" : m.error().message;
}

TEST(ProbeQpParams, OneSetOfDefaultsForClassSetupAndEndpoint) {
  // A 64-byte RDMA write on traffic class 0, service level 0, 1024-byte MTU.
  const QpParams defaults;
  EXPECT_EQ(defaults.op, Op::write);
  EXPECT_EQ(defaults.size, 64u);
  EXPECT_EQ(defaults.tclass, 0);
  EXPECT_EQ(defaults.sl, 0);
  EXPECT_EQ(defaults.mtu, 1024u);
  EXPECT_EQ(static_cast<const QpParams&>(ProbeClass{}), defaults);
  EXPECT_EQ(static_cast<const QpParams&>(wire::Setup{}), defaults);
  EXPECT_EQ(static_cast<const QpParams&>(EndpointConfig{}), defaults);
  EXPECT_STREQ(op_name(Op::send), "send");
  EXPECT_STREQ(op_name(Op::write), "write");
  EXPECT_STREQ(op_name(Op::read), "read");
  EXPECT_STREQ(op_name(Op::ud), "ud");
}

TEST(ProbeProtocol, EveryMessageRoundTrips) {
  wire::Hello hello = sample_hello();
  hello.auth_required = true;
  wire::Setup by_rail = sample_setup();
  by_rail.device = "";
  by_rail.rail = "10.1.0.0/16";
  wire::Setup both = sample_setup();
  both.rail = "rail 7";
  wire::Accept accept;
  accept.peer = sample_setup().peer;
  const std::vector<wire::Message> messages = {wire::Hello{},
                                               hello,
                                               sample_setup(),
                                               by_rail,
                                               both,
                                               accept,
                                               wire::Reject{wire::RejectCode::rate, "slow down"},
                                               wire::Keepalive{}};
  for (const auto& m : messages) {
    const auto bytes = wire::encode(m);
    auto back = wire::decode(bytes);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(back.value(), m);
  }
}

TEST(ProbeProtocol, HeaderIsMagicVersionTypeAndBigEndianLength) {
  EXPECT_EQ(wire::kVersion, 2);
  const auto bytes = wire::encode(wire::Reject{wire::RejectCode::auth, "no"});
  ASSERT_EQ(bytes.size(), wire::kHeaderSize + 3);
  EXPECT_EQ(bytes[0], 'R');
  EXPECT_EQ(bytes[1], 'X');
  EXPECT_EQ(bytes[2], 'P');
  EXPECT_EQ(bytes[3], 2);
  EXPECT_EQ(bytes[4], static_cast<uint8_t>(wire::Type::reject));
  EXPECT_EQ(bytes[5], 0);
  EXPECT_EQ(bytes[6], 0);
  EXPECT_EQ(bytes[7], 3);
  EXPECT_EQ(bytes[8], static_cast<uint8_t>(wire::RejectCode::auth));
}

TEST(ProbeProtocol, SetupFieldsAreBigEndian) {
  const auto bytes = wire::encode(sample_setup());
  // op, then size 4096 = 00 00 10 00
  EXPECT_EQ(bytes[wire::kHeaderSize], static_cast<uint8_t>(Op::read));
  EXPECT_EQ(bytes[wire::kHeaderSize + 1], 0x00);
  EXPECT_EQ(bytes[wire::kHeaderSize + 3], 0x10);
  EXPECT_EQ(bytes[wire::kHeaderSize + 4], 0x00);
}

TEST(ProbeProtocol, SetupEncodesToTheseBytes) {
  const std::vector<uint8_t> want = {
      'R',  'X',  'P',  2,    2,    0,    0x00, 88,  // header: v2, setup, 88 bytes
      3,                                             // op: read
      0x00, 0x00, 0x10, 0x00,                        // size 4096
      106,                                           // tclass
      3,                                             // sl
      0x08, 0x00,                                    // mtu 2048
      0x00, 0x12, 0x34, 0x56,                        // qpn
      0x00, 0xab, 0xcd, 0xef,                        // psn
      0x00, 0x07,                                    // lid
      0,    3,    6,    9,    12,   15,   18,   21,   24,   27,   30,
      33,   36,   39,   42,   45,                      // gid
      0xde, 0xad, 0xbe, 0xef,                          // rkey
      0x00, 0x00, 0x7f, 0x00, 0x11, 0x22, 0x33, 0x44,  // addr
      6,    'm',  'l',  'x',  '5',  '_',  '1',         // device "mlx5_1"
      2,                                               // port
      0,                                               // rail: none
      0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a,
      0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a,
      0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a,  // mac, last
  };
  EXPECT_EQ(wire::encode(sample_setup()), want);
}

TEST(ProbeProtocol, SetupForARailEncodesAnEmptyDeviceAndTheRail) {
  wire::Setup s = sample_setup();
  s.device = "";
  s.port = 1;
  s.rail = "10.1.0.0/16";
  const auto bytes = wire::encode(s);
  // 47 bytes of fields and peer, 1 (no device), 1 (port), 12 (rail), 32.
  ASSERT_EQ(bytes.size(), wire::kHeaderSize + 93);
  EXPECT_EQ(bytes[7], 93);
  const std::vector<uint8_t> tail(bytes.begin() + wire::kHeaderSize + kSetupDevice,
                                  bytes.end() - wire::kMacSize);
  EXPECT_EQ(tail, (std::vector<uint8_t>{0, 1, 11, '1', '0', '.', '1', '.', '0', '.', '0', '/', '1',
                                        '6'}));
}

TEST(ProbeProtocol, HelloEncodesToTheseBytes) {
  const std::vector<uint8_t> want = {
      'R',  'X',  'P',  2,    1,    0,    0x00, 95,  // header: v2, hello, 95 bytes
      0,    1,    2,    3,    4,    5,    6,    7,   8,    9,
      10,   11,   12,   13,   14,   15,         // nonce
      0,                                        // no authentication
      2,                                        // two ports
      6,    'm',  'l',  'x',  '5',  '_',  '0',  // device
      1,                                        // port
      1,                                        // ethernet
      0,    0,    0,    0,    0,    0,    0,    0,   0,    0,
      0xff, 0xff, 192,  168,  100,  7,  // gid
      16,   '1',  '9',  '2',  '.',  '1',  '6',  '8', '.',  '1',
      '0',  '0',  '.',  '0',  '/',  '2',  '4',  // rail
      6,    'm',  'l',  'x',  '5',  '_',  '2',  // device
      2,                                        // port
      2,                                        // infiniband
      0xfe, 0x80, 0,    0,    0,    0,    0,    0,   0x00, 0x02,
      0xc9, 0x03, 0x00, 0x12, 0x34, 0x56,                        // gid
      9,    'f',  'e',  '8',  '0',  ':',  ':',  '/', '6',  '4',  // rail
  };
  EXPECT_EQ(wire::encode(sample_hello()), want);
  // The bytes above, read back.
  auto back = wire::decode(want);
  ASSERT_TRUE(back) << back.error().message;
  const auto& hello = std::get<wire::Hello>(back.value());
  ASSERT_EQ(hello.ports.size(), 2u);
  EXPECT_EQ(hello.ports[0].device, "mlx5_0");
  EXPECT_TRUE(hello.ports[0].ethernet);
  EXPECT_EQ(hello.ports[0].rail, "192.168.100.0/24");
  EXPECT_EQ(hello.ports[1].port, 2);
  EXPECT_FALSE(hello.ports[1].ethernet);
  EXPECT_EQ(hello.ports[1].rail, "fe80::/64");
}

TEST(ProbeProtocol, HelloListsAtMost32Ports) {
  wire::Hello h;
  for (int i = 0; i < 33; ++i) {
    wire::PortAd p;
    p.device = "mlx5_" + std::to_string(i);
    p.rail = "r";
    h.ports.push_back(p);
  }
  // The encoder sends the first 32.
  const auto bytes = wire::encode(h);
  EXPECT_EQ(bytes[wire::kHeaderSize + 17], 32);
  auto back = wire::decode(bytes);
  ASSERT_TRUE(back) << back.error().message;
  const auto& got = std::get<wire::Hello>(back.value()).ports;
  ASSERT_EQ(got.size(), 32u);
  EXPECT_EQ(got.back().device, "mlx5_31");
  // A peer that says 33 is refused before anything else is read.
  auto payload = payload_of(h);
  payload[17] = 33;
  EXPECT_EQ(refusal(frame(wire::Type::hello, payload)), "hello: more than 32 ports");
}

TEST(ProbeProtocol, MalformedHellosAreRefused) {
  // One port: the device's length byte is at 18, the device 19-24
  // ("mlx5_0"), port 25, link layer 26, gid 27-42, the rail's length 43.
  wire::Hello one;
  one.ports = {sample_hello().ports[0]};
  const auto good = payload_of(one);
  ASSERT_EQ(good.size(), 60u);
  ASSERT_EQ(refusal(frame(wire::Type::hello, good)), "");
  auto with = [&](std::size_t at, uint8_t v) {
    auto p = good;
    p.at(at) = v;
    return refusal(frame(wire::Type::hello, p));
  };
  EXPECT_EQ(with(16, 2), "hello: unknown flags");
  EXPECT_EQ(with(17, 2), "hello: port 1: bad device name");  // ports run out
  EXPECT_EQ(with(18, 0), "hello: port 0: bad device name");  // empty
  EXPECT_EQ(with(19, 0x1f), "hello: port 0: bad device name");
  EXPECT_EQ(with(24, 0x7f), "hello: port 0: bad device name");
  EXPECT_EQ(with(25, 0), "hello: port 0: port number 0");
  EXPECT_EQ(with(26, 0), "hello: port 0: unknown link layer 0");
  EXPECT_EQ(with(26, 3), "hello: port 0: unknown link layer 3");
  EXPECT_EQ(with(44, '\n'), "hello: port 0: bad rail");
  EXPECT_EQ(with(43, 65), "hello: port 0: bad rail");  // longer than 64
  // An empty rail, nothing after it.
  auto empty_rail = good;
  empty_rail.resize(44);
  empty_rail[43] = 0;
  EXPECT_EQ(refusal(frame(wire::Type::hello, empty_rail)), "hello: port 0: bad rail");
  // A byte after the last port.
  auto longer = good;
  longer.push_back('x');
  EXPECT_EQ(refusal(frame(wire::Type::hello, longer)), "hello: bytes after the last port");
  // Ending inside the port.
  auto cut = good;
  cut.resize(30);
  EXPECT_EQ(refusal(frame(wire::Type::hello, cut)), "hello: port 0: truncated");
  cut.resize(17);
  EXPECT_EQ(refusal(frame(wire::Type::hello, cut)), "hello: truncated");
}

TEST(ProbeProtocol, NamesAreOneTo64PrintableBytes) {
  // 64 bytes, with the lowest and highest printable ones.
  const std::string longest = "~" + std::string(62, 'n') + " ";
  ASSERT_EQ(longest.size(), 64u);
  wire::Hello h;
  h.ports = {sample_hello().ports[0]};
  h.ports[0].device = longest;
  h.ports[0].rail = longest;
  auto back = wire::decode(wire::encode(h));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(std::get<wire::Hello>(back.value()), h);
  wire::Setup s = sample_setup();
  s.device = longest;
  s.rail = longest;
  back = wire::decode(wire::encode(s));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(std::get<wire::Setup>(back.value()), s);

  // 65 bytes: the encoder sends the first 64 ...
  wire::Setup over = sample_setup();
  over.device = longest + "X";
  const auto bytes = wire::encode(over);
  EXPECT_EQ(bytes[wire::kHeaderSize + kSetupDevice], 64);
  back = wire::decode(bytes);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(std::get<wire::Setup>(back.value()).device, longest);
  // ... and a peer that sends 65 is refused.
  std::vector<uint8_t> payload = payload_of(sample_setup());
  payload.erase(payload.begin() + kSetupDevice, payload.begin() + kSetupDevice + 7);
  std::vector<uint8_t> name(1, 65);
  name.insert(name.end(), 65, 'a');
  payload.insert(payload.begin() + kSetupDevice, name.begin(), name.end());
  EXPECT_EQ(refusal(frame(wire::Type::setup, payload)), "setup: bad device name");
}

// The encoder never sends a hello the decoder would refuse: 32 ports with
// 64-byte device names and rails, 18 + 32 * (65 + 1 + 1 + 16 + 65) = 4754
// bytes of payload.
TEST(ProbeProtocol, LargestHelloIsDecodable) {
  wire::Hello h;
  for (int i = 0; i < 32; ++i) {
    wire::PortAd p;
    p.device = std::string(62, 'd') + std::to_string(10 + i);
    p.rail = std::string(64, 'r');
    h.ports.push_back(p);
  }
  const auto bytes = wire::encode(h);
  ASSERT_EQ(bytes.size(), wire::kHeaderSize + 4754);
  EXPECT_EQ(bytes[6], 0x12);  // 4754 = 0x1292
  EXPECT_EQ(bytes[7], 0x92);
  auto back = wire::decode(bytes);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(std::get<wire::Hello>(back.value()), h);
}

TEST(ProbeProtocol, MalformedSetupsAreRefused) {
  // sample_setup's payload: device length 47, "mlx5_1" 48-53, port 54,
  // rail length 55, the MAC 56-87.
  const auto good = payload_of(sample_setup());
  ASSERT_EQ(good.size(), 88u);
  auto with = [&](std::size_t at, uint8_t v) {
    auto p = good;
    p.at(at) = v;
    return refusal(frame(wire::Type::setup, p));
  };
  EXPECT_EQ(with(48, 0x09), "setup: bad device name");
  EXPECT_EQ(with(53, 0x80), "setup: bad device name");
  EXPECT_EQ(with(54, 0), "setup: port number 0");
  // A rail length that runs into the MAC, whose bytes (0x5a, 'Z') are
  // printable: the MAC is then short.
  EXPECT_EQ(with(55, 3), "setup: truncated");
  // Neither a device nor a rail.
  auto neither = good;
  neither.erase(neither.begin() + 48, neither.begin() + 54);
  neither[47] = 0;
  EXPECT_EQ(refusal(frame(wire::Type::setup, neither)), "setup: names neither a device nor a rail");
  // A rail that is not printable.
  wire::Setup by_rail = sample_setup();
  by_rail.device = "";
  by_rail.rail = "ab";
  auto rail = payload_of(by_rail);
  ASSERT_EQ(rail[49], 2);
  rail[51] = 0x00;
  EXPECT_EQ(refusal(frame(wire::Type::setup, rail)), "setup: bad rail");
  // A byte after the MAC.
  auto longer = good;
  longer.push_back(0);
  EXPECT_EQ(refusal(frame(wire::Type::setup, longer)), "setup: bytes after the MAC");
  // Ending inside the MAC, before the rail, before the port, inside the peer.
  auto cut = good;
  cut.resize(87);
  EXPECT_EQ(refusal(frame(wire::Type::setup, cut)), "setup: truncated");
  cut.resize(55);
  EXPECT_NE(refusal(frame(wire::Type::setup, cut)), "");
  cut.resize(54);
  EXPECT_EQ(refusal(frame(wire::Type::setup, cut)), "setup: truncated");
  cut.resize(46);
  EXPECT_EQ(refusal(frame(wire::Type::setup, cut)), "setup: truncated");
}

TEST(ProbeProtocol, SetupMacCoversEverythingButTheMac) {
  for (const wire::Setup& s : {sample_setup(), [] {
                                 wire::Setup r = sample_setup();
                                 r.device = "";
                                 r.rail = "10.1.0.0/16";
                                 return r;
                               }()}) {
    auto payload = payload_of(s);
    payload.resize(payload.size() - wire::kMacSize);
    EXPECT_EQ(wire::setup_mac_input(s), payload);
  }
  // 47 + 7 (device) + 1 (port) + 1 (no rail).
  EXPECT_EQ(wire::setup_mac_input(sample_setup()).size(), 56u);
}

// Sets byte `at` of an encoded setup and expects the decoder to refuse it
// with a message containing `want`.
void expect_rejected(std::size_t at, uint8_t value, const std::string& want) {
  auto bytes = wire::encode(sample_setup());
  bytes.at(at) = value;
  auto m = wire::decode(bytes);
  ASSERT_FALSE(m) << "byte " << at << " = " << int(value);
  EXPECT_NE(m.error().message.find(want), std::string::npos) << m.error().message;
}

TEST(ProbeProtocol, MalformedHeadersAreRefused) {
  expect_rejected(0, 'G', "bad magic");
  expect_rejected(3, 1, "protocol version 1 not spoken (this is 2)");
  expect_rejected(3, 3, "protocol version 3 not spoken (this is 2)");
  expect_rejected(4, 0, "unknown message type 0");
  expect_rejected(4, 99, "unknown message type 99");
  expect_rejected(5, 1, "reserved");
  EXPECT_EQ(wire::decode_header(std::vector<uint8_t>{'R', 'X'}).error().message,
            "truncated header");
  EXPECT_EQ(wire::decode_header(wire::encode(sample_setup())).value().type, wire::Type::setup);
  const auto version = wire::decode(std::vector<uint8_t>{'R', 'X', 'P', 1, 5, 0, 0, 0});
  ASSERT_FALSE(version);
  EXPECT_EQ(version.error().code, EPROTONOSUPPORT);
}

// 8192 bytes: room for the largest hello (LargestHelloIsDecodable).
TEST(ProbeProtocol, PayloadsAreAtMost8192Bytes) {
  EXPECT_EQ(wire::kMaxPayload, 8192u);
  const auto most = wire::decode_header(std::vector<uint8_t>{'R', 'X', 'P', 2, 1, 0, 0x20, 0x00});
  ASSERT_TRUE(most) << most.error().message;
  EXPECT_EQ(most->length, 8192);
  const auto over = wire::decode_header(std::vector<uint8_t>{'R', 'X', 'P', 2, 1, 0, 0x20, 0x01});
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().message, "payload of 8193 bytes exceeds 8192");
}

TEST(ProbeProtocol, MalformedSetupFieldsAreRefused) {
  const std::size_t p = wire::kHeaderSize;
  expect_rejected(p + 0, 0, "unknown operation");
  expect_rejected(p + 0, 4, "operation ud needs a ud_setup");
  expect_rejected(p + 0, 5, "unknown operation");
  expect_rejected(p + 6, 16, "service level");
  expect_rejected(p + 7, 0x03, "MTU");  // 0x0300 = 768
  // qpn = 0
  auto bytes = wire::encode(sample_setup());
  for (std::size_t i = 0; i < 4; ++i) bytes[p + 9 + i] = 0;
  EXPECT_FALSE(wire::decode(bytes));
  // qpn above 24 bits
  bytes = wire::encode(sample_setup());
  bytes[p + 9] = 1;
  EXPECT_FALSE(wire::decode(bytes));
  // psn above 24 bits
  bytes = wire::encode(sample_setup());
  bytes[p + 13] = 1;
  EXPECT_FALSE(wire::decode(bytes));
  // size 0
  bytes = wire::encode(sample_setup());
  for (std::size_t i = 1; i < 5; ++i) bytes[p + i] = 0;
  EXPECT_FALSE(wire::decode(bytes));
}

TEST(ProbeProtocol, WrongPayloadLengthsAreRefused) {
  for (const wire::Message& m : {wire::Message{wire::Hello{}}, wire::Message{sample_hello()},
                                 wire::Message{sample_setup()}, wire::Message{wire::Keepalive{}}}) {
    auto bytes = wire::encode(m);
    // One byte more, with the header saying so.
    bytes.push_back(0);
    bytes[7] = static_cast<uint8_t>(bytes[7] + 1);
    EXPECT_FALSE(wire::decode(bytes));
    // A buffer shorter than the header says.
    auto shorter = wire::encode(m);
    if (shorter.size() > wire::kHeaderSize) {
      shorter.pop_back();
      EXPECT_FALSE(wire::decode(shorter));
    }
  }
  EXPECT_FALSE(wire::decode_payload(wire::Type::reject, {}));
}

TEST(ProbeProtocol, RejectReasonMustBePrintable) {
  auto bytes = wire::encode(wire::Reject{wire::RejectCode::protocol, "abc"});
  bytes.back() = 0x07;
  EXPECT_FALSE(wire::decode(bytes));
  // The encoder never sends what the decoder would refuse.
  const auto clean = wire::encode(wire::Reject{wire::RejectCode::protocol, "bad\nname\x01"});
  auto back = wire::decode(clean);
  ASSERT_TRUE(back);
  EXPECT_EQ(std::get<wire::Reject>(back.value()).reason, "bad?name?");
  auto code = wire::encode(wire::Reject{wire::RejectCode::protocol, ""});
  code[wire::kHeaderSize] = 42;
  EXPECT_FALSE(wire::decode(code));
}

TEST(ProbeProtocol, RejectReasonIsAtMost200Bytes) {
  // 200 bytes: sent and read back whole, in a 201-byte payload (code, reason).
  const std::string longest(200, 'r');
  const auto bytes = wire::encode(wire::Reject{wire::RejectCode::capacity, longest});
  ASSERT_EQ(bytes.size(), 209u);
  EXPECT_EQ(bytes[6], 0);
  EXPECT_EQ(bytes[7], 201);
  auto back = wire::decode(bytes);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(std::get<wire::Reject>(back.value()).reason, longest);

  // 201 bytes: the encoder sends the first 200.
  const auto cut = wire::encode(wire::Reject{wire::RejectCode::capacity, longest + "X"});
  ASSERT_EQ(cut.size(), 209u);
  EXPECT_EQ(cut[7], 201);
  back = wire::decode(cut);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(std::get<wire::Reject>(back.value()).reason, longest);

  // A peer that sends 201 bytes of reason (a 202-byte payload) is refused.
  std::vector<uint8_t> over = {'R', 'X', 'P', 2, 4, 0, 0, 202, 3};
  over.insert(over.end(), 201, 'r');
  const auto refused = wire::decode(over);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "reject: payload of 202 bytes");
}

TEST(ProbeProtocol, HelloFlagsAreChecked) {
  // nonce (16 bytes), flags, port count
  auto bytes = wire::encode(wire::Hello{});
  ASSERT_EQ(bytes.size(), wire::kHeaderSize + 18);
  bytes[wire::kHeaderSize + 16] = 2;
  EXPECT_EQ(refusal(bytes), "hello: unknown flags");
  bytes[wire::kHeaderSize + 16] = 1;
  auto back = wire::decode(bytes);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_TRUE(std::get<wire::Hello>(back.value()).auth_required);
}

TEST(ProbeProtocol, EveryTruncationOfEveryMessageIsAnError) {
  wire::Setup by_rail = sample_setup();
  by_rail.device = "";
  by_rail.rail = "10.1.0.0/16";
  const std::vector<wire::Message> messages = {wire::Hello{},
                                               sample_hello(),
                                               sample_setup(),
                                               by_rail,
                                               wire::Accept{sample_setup().peer},
                                               wire::Reject{wire::RejectCode::auth, "x"}};
  for (const auto& m : messages) {
    const auto bytes = wire::encode(m);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      EXPECT_FALSE(wire::decode(std::span<const uint8_t>(bytes.data(), n))) << n;
    }
    // The payload cut short, with a header that says so (a reject's reason
    // may be cut anywhere).
    std::vector<uint8_t> payload(bytes.begin() + wire::kHeaderSize, bytes.end());
    const auto type = static_cast<wire::Type>(bytes[4]);
    if (type == wire::Type::reject) continue;
    for (std::size_t n = 0; n < payload.size(); ++n) {
      EXPECT_FALSE(wire::decode_payload(type, std::span<const uint8_t>(payload.data(), n)))
          << static_cast<int>(type) << " cut at " << n;
    }
  }
}

TEST(ProbeAuth, MacDependsOnSecretNonceAndEveryField) {
  const std::string secret = "0123456789abcdef-secret";
  Nonce nonce = random_nonce();
  wire::Setup s = sample_setup();
  s.mac = setup_mac(secret, nonce, s);
  EXPECT_TRUE(setup_mac_valid(secret, nonce, s));
  EXPECT_FALSE(setup_mac_valid(secret + "x", nonce, s));
  Nonce other = nonce;
  other[0] ^= 1;
  EXPECT_FALSE(setup_mac_valid(secret, other, s));
  wire::Setup changed = s;
  changed.size += 1;
  EXPECT_FALSE(setup_mac_valid(secret, nonce, changed));
  changed = s;
  changed.peer.rkey ^= 1;
  EXPECT_FALSE(setup_mac_valid(secret, nonce, changed));
  // Which port the setup asks for is covered too.
  changed = s;
  changed.device = "mlx5_2";
  EXPECT_FALSE(setup_mac_valid(secret, nonce, changed));
  changed = s;
  changed.port = 1;
  EXPECT_FALSE(setup_mac_valid(secret, nonce, changed));
  changed = s;
  changed.rail = "r";
  EXPECT_FALSE(setup_mac_valid(secret, nonce, changed));
  EXPECT_NE(random_nonce(), random_nonce());
}

// HMAC-SHA256(secret, nonce || the setup's payload without its MAC), with a
// digest computed independently of the code under test (Python's hmac over
// the bytes of SetupEncodesToTheseBytes without the MAC, and a nonce of
// 0x00..0x0f).
TEST(ProbeAuth, MacIsHmacSha256OfNonceAndPayload) {
  Nonce nonce{};
  for (std::size_t i = 0; i < nonce.size(); ++i) nonce[i] = static_cast<uint8_t>(i);
  const Mac want = {0xfd, 0x92, 0x9d, 0x51, 0x64, 0x19, 0x00, 0xba, 0xd9, 0xf6, 0xea,
                    0xed, 0x62, 0xcf, 0xa8, 0x93, 0xf6, 0xce, 0xe1, 0xa5, 0x77, 0x5e,
                    0x46, 0xf9, 0x8d, 0xeb, 0x43, 0x93, 0xbb, 0x00, 0xd3, 0xf0};
  EXPECT_EQ(setup_mac("0123456789abcdef-secret", nonce, sample_setup()), want);
}

// A UD set-up for port 1 of rxe0: 64-byte datagrams on traffic class 106.
wire::UdSetup sample_ud_setup() {
  wire::UdSetup s;
  s.size = 64;
  s.tclass = 106;
  s.sl = 0;
  s.mtu = 1024;
  s.peer.qpn = 0x000011;
  s.peer.qkey = 0x11223344;
  s.peer.lid = 0;
  s.peer.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
  s.device = "rxe0";
  s.port = 1;
  s.mac.fill(0x11);
  return s;
}

TEST(ProbeProtocolUd, UdSetupAndAcceptEncodeToTheseBytes) {
  const auto bytes = wire::encode(sample_ud_setup());
  const std::vector<uint8_t> want = {
      'R',  'X',  'P',  2,    6,   0, 0, 74,  // header: type 6, 74 bytes
      4,                                      // op ud
      0,    0,    0,    64,                   // size
      106,  0,                                // tclass, sl
      0x04, 0x00,                             // mtu 1024
      0,    0,    0,    0x11,                 // qpn
      0x11, 0x22, 0x33, 0x44,                 // qkey
      0,    0,                                // lid
      0,    0,    0,    0,    0,   0, 0, 0,  0, 0, 0xff, 0xff, 10, 0, 0, 2,  // gid
      4,    'r',  'x',  'e',  '0',                                           // device
      1,                                                                     // port
      0,                                                                     // rail: none
  };
  ASSERT_EQ(bytes.size(), want.size() + 32);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), bytes.begin()));
  EXPECT_TRUE(std::all_of(bytes.end() - 32, bytes.end(), [](uint8_t b) { return b == 0x11; }));

  wire::UdAccept accept;
  accept.peer = {0xabcdef, 0x7fffffff, 3, {}};
  const auto a = wire::encode(accept);
  const std::vector<uint8_t> want_a = {'R',  'X',  'P',  2,    7, 0, 0, 26, 0, 0xab, 0xcd, 0xef,
                                       0x7f, 0xff, 0xff, 0xff, 0, 3, 0, 0,  0, 0,    0,    0,
                                       0,    0,    0,    0,    0, 0, 0, 0,  0, 0};
  EXPECT_EQ(a, want_a);
}

TEST(ProbeProtocolUd, UdMessagesRoundTripAndTruncationsFail) {
  wire::UdSetup by_rail = sample_ud_setup();
  by_rail.device = "";
  by_rail.rail = "10.0.0.0/24";
  wire::UdAccept accept;
  accept.peer = sample_ud_setup().peer;
  for (const wire::Message& m : std::vector<wire::Message>{sample_ud_setup(), by_rail, accept}) {
    const auto bytes = wire::encode(m);
    auto back = wire::decode(bytes);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(back.value(), m);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      EXPECT_FALSE(wire::decode(std::span<const uint8_t>(bytes.data(), n))) << n;
    }
  }
}

TEST(ProbeProtocolUd, MalformedUdSetupsAreRefused) {
  const auto refused = [](wire::UdSetup s, const std::string& why) {
    auto r = wire::decode(wire::encode(s));
    ASSERT_FALSE(r) << why;
    EXPECT_NE(r.error().message.find(why), std::string::npos) << r.error().message;
  };
  wire::UdSetup s = sample_ud_setup();
  s.size = 31;
  refused(s, "datagram size 31");
  s = sample_ud_setup();
  s.size = 1025;  // above the MTU
  refused(s, "datagram size 1025");
  s = sample_ud_setup();
  s.peer.qpn = 1;
  refused(s, "queue pair number");
  s = sample_ud_setup();
  s.peer.qpn = 0x1000000;
  refused(s, "queue pair number");
  s = sample_ud_setup();
  s.peer.qkey = 0x80000000;
  refused(s, "controlled Q_Key");
  s = sample_ud_setup();
  s.device = "";
  refused(s, "neither a device nor a rail");
  // The operation byte must say ud, and a plain setup may not say ud.
  auto bytes = wire::encode(sample_ud_setup());
  bytes[wire::kHeaderSize] = static_cast<uint8_t>(Op::write);
  EXPECT_FALSE(wire::decode(bytes));
  wire::Setup rc = sample_setup();
  rc.op = Op::ud;
  auto r = wire::decode(wire::encode(rc));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("needs a ud_setup"), std::string::npos);
  // Type 8 does not exist.
  bytes = wire::encode(sample_ud_setup());
  bytes[4] = 8;
  EXPECT_FALSE(wire::decode(bytes));
}

TEST(ProbeProtocolUd, UdSetupMacCoversItsFields) {
  const std::string secret = "0123456789abcdef-secret";
  const Nonce nonce = random_nonce();
  wire::UdSetup s = sample_ud_setup();
  s.mac = setup_mac(secret, nonce, s);
  EXPECT_TRUE(setup_mac_valid(secret, nonce, s));
  wire::UdSetup changed = s;
  changed.peer.qkey ^= 1;
  EXPECT_FALSE(setup_mac_valid(secret, nonce, changed));
  changed = s;
  changed.peer.gid[15] ^= 1;
  EXPECT_FALSE(setup_mac_valid(secret, nonce, changed));
  changed = s;
  changed.tclass = 0;
  EXPECT_FALSE(setup_mac_valid(secret, nonce, changed));
}

TEST(ProbeProtocolUd, DatagramEncodesToTheseBytes) {
  wire::Datagram d;
  d.kind = wire::DatagramKind::reply;
  d.flags = wire::kDelayDeviceClock;
  d.path = 3;
  d.tclass = 106;
  d.session = 0x01020304;
  d.seq = 0x1122334455667788ull;
  d.responder_delay_ns = 12345;  // 0x3039
  std::vector<uint8_t> out(64, 0xee);
  wire::encode_datagram(d, out);
  const std::vector<uint8_t> want = {'R', 'X',  'U',  1,    2,    1,    3,    106,  1,    2, 3,
                                     4,   0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0, 0,
                                     0,   0,    0,    0,    0x30, 0x39, 0,    0,    0,    0};
  EXPECT_TRUE(std::equal(want.begin(), want.end(), out.begin()));
  EXPECT_EQ(out[32], 0xee);  // padding is left alone
  auto back = wire::decode_datagram(out);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back.value(), d);
}

TEST(ProbeProtocolUd, MalformedDatagramsAreRefused) {
  wire::Datagram request;
  request.session = 9;
  request.seq = 1;
  std::vector<uint8_t> good(32);
  wire::encode_datagram(request, good);
  ASSERT_TRUE(wire::decode_datagram(good));
  const auto bad = [&](std::size_t at, uint8_t value) {
    std::vector<uint8_t> b = good;
    b[at] = value;
    return !wire::decode_datagram(b);
  };
  EXPECT_TRUE(bad(0, 'Q'));  // magic
  EXPECT_TRUE(bad(3, 2));    // version
  EXPECT_TRUE(bad(4, 0));    // kind
  EXPECT_TRUE(bad(4, 3));
  EXPECT_TRUE(bad(5, 1));     // a request with flags
  EXPECT_TRUE(bad(27, 1));    // a request with a delay
  EXPECT_TRUE(bad(31, 1));    // reserved
  EXPECT_FALSE(bad(6, 255));  // any path
  EXPECT_FALSE(wire::decode_datagram(std::span<const uint8_t>(good.data(), 31)));
  wire::Datagram reply = request;
  reply.kind = wire::DatagramKind::reply;
  reply.responder_delay_ns = wire::kMaxResponderDelayNs;
  wire::encode_datagram(reply, good);
  EXPECT_TRUE(wire::decode_datagram(good));
  reply.responder_delay_ns += 1;
  wire::encode_datagram(reply, good);
  EXPECT_FALSE(wire::decode_datagram(good));
  reply.responder_delay_ns = 0;
  reply.flags = 2;
  wire::encode_datagram(reply, good);
  EXPECT_FALSE(wire::decode_datagram(good));
}

TEST(ProbeAuth, SecretFileNeedsSixteenBytes) {
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "/probe_secret";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("short\n", f);
  std::fclose(f);
  auto r = read_secret_file(path);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("at least 16"), std::string::npos);
  f = std::fopen(path.c_str(), "w");
  std::fputs("a-long-enough-secret\n", f);
  std::fclose(f);
  r = read_secret_file(path);
  ASSERT_TRUE(r);
  EXPECT_EQ(r.value(), "a-long-enough-secret");
  EXPECT_FALSE(read_secret_file(dir + "/does-not-exist"));
  f = std::fopen(path.c_str(), "w");
  const std::string huge(5000, 'x');
  std::fputs(huge.c_str(), f);
  std::fclose(f);
  r = read_secret_file(path);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("more than 4096 bytes"), std::string::npos);
}

}  // namespace
}  // namespace rdma_exporter::probe
