#include "exporter/probe/wire/protocol.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>

#include "exporter/probe/plan/options.hpp"
#include "exporter/probe/verbs/endpoint.hpp"
#include "exporter/probe/wire/auth.hpp"
#include "exporter/probe/wire/datagram.hpp"

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
  for (std::size_t i = 0; i < 16; ++i) s.nonce[i] = static_cast<uint8_t>(0xa0 + i);
  s.dialled.address = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 9};  // ::ffff:10.0.0.9
  s.dialled.port = 10911;
  wire::Mac mac;
  mac.fill(0x5a);
  s.macs = {mac};
  return s;
}

wire::UdSetup sample_ud_setup();

// A MAC computed by the code under test, checked against the message's.
template <typename S>
bool mac_valid(const std::string& secret, const Nonce& nonce, const S& s) {
  return !s.macs.empty() && mac_equal(setup_mac(secret, nonce, s), s.macs.front());
}

// Offsets in a setup's payload: op 0, size 1-4, tclass 5, sl 6, mtu 7-8,
// the peer 9-46 (qpn 9, psn 13, lid 17, gid 19, rkey 35, addr 39), then the
// device's length byte at 47; after the rail, the prober's nonce (16), the
// address dialled (16 + 2), the MAC count (1) and the MAC (32).
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
       {uint8_t{'R'}, uint8_t{'X'}, uint8_t{'P'}, wire::kVersion, static_cast<uint8_t>(type),
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
  hello.keys = 2;
  wire::Setup by_rail = sample_setup();
  by_rail.macs = {};  // without a secret
  wire::Setup two = sample_setup();
  two.macs.push_back({});
  two.macs.back().fill(0x6b);  // during a rotation's grace period
  by_rail.device = "";
  by_rail.rail = "10.1.0.0/16";
  wire::Setup both = sample_setup();
  both.rail = "rail 7";
  wire::Accept accept;
  accept.peer = sample_setup().peer;
  accept.mac.fill(0x3c);
  const std::vector<wire::Message> messages = {wire::Hello{},
                                               hello,
                                               sample_setup(),
                                               by_rail,
                                               both,
                                               two,
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
  EXPECT_EQ(wire::kVersion, 4);
  const auto bytes = wire::encode(wire::Reject{wire::RejectCode::auth, "no"});
  ASSERT_EQ(bytes.size(), wire::kHeaderSize + 3);
  EXPECT_EQ(bytes[0], 'R');
  EXPECT_EQ(bytes[1], 'X');
  EXPECT_EQ(bytes[2], 'P');
  EXPECT_EQ(bytes[3], 4);
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
      'R',  'X',  'P',  4,    2,    0,    0x00, 123,  // header: v4, setup, 123 bytes
      3,                                              // op: read
      0x00, 0x00, 0x10, 0x00,                         // size 4096
      106,                                            // tclass
      3,                                              // sl
      0x08, 0x00,                                     // mtu 2048
      0x00, 0x12, 0x34, 0x56,                         // qpn
      0x00, 0xab, 0xcd, 0xef,                         // psn
      0x00, 0x07,                                     // lid
      0,    3,    6,    9,    12,   15,   18,   21,   24,   27,   30,
      33,   36,   39,   42,   45,                      // gid
      0xde, 0xad, 0xbe, 0xef,                          // rkey
      0x00, 0x00, 0x7f, 0x00, 0x11, 0x22, 0x33, 0x44,  // addr
      6,    'm',  'l',  'x',  '5',  '_',  '1',         // device "mlx5_1"
      2,                                               // port
      0,                                               // rail: none
      0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa,
      0xab, 0xac, 0xad, 0xae, 0xaf,  // the prober's nonce
      0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0xff,
      0xff, 10,   0,    0,    9,  // dialled ::ffff:10.0.0.9
      0x2a, 0x9f,                 // port 10911
      1,                          // one MAC
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
  // 47 bytes of fields and peer, 1 (no device), 1 (port), 12 (rail),
  // 16 + 18 (nonce, dialled), 1 + 32 (one MAC).
  ASSERT_EQ(bytes.size(), wire::kHeaderSize + 128);
  EXPECT_EQ(bytes[7], 128);
  const std::vector<uint8_t> tail(bytes.begin() + wire::kHeaderSize + kSetupDevice,
                                  bytes.end() - 1 - wire::kMacSize - 34);
  EXPECT_EQ(tail, (std::vector<uint8_t>{0, 1, 11, '1', '0', '.', '1', '.', '0', '.', '0', '/', '1',
                                        '6'}));
}

TEST(ProbeProtocol, HelloEncodesToTheseBytes) {
  const std::vector<uint8_t> want = {
      'R',  'X',  'P',  4,    1,    0,    0x00, 95,  // header: v4, hello, 95 bytes
      0,    1,    2,    3,    4,    5,    6,    7,   8,    9,
      10,   11,   12,   13,   14,   15,         // nonce
      0,                                        // no secrets: no authentication
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
  EXPECT_EQ(with(16, 3), "hello: more than 2 secrets");
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
  // rail length 55, the nonce 56-71, the address dialled 72-89, the MAC
  // count 90, the MAC 91-122.
  const auto good = payload_of(sample_setup());
  ASSERT_EQ(good.size(), 123u);
  auto with = [&](std::size_t at, uint8_t v) {
    auto p = good;
    p.at(at) = v;
    return refusal(frame(wire::Type::setup, p));
  };
  EXPECT_EQ(with(48, 0x09), "setup: bad device name");
  EXPECT_EQ(with(53, 0x80), "setup: bad device name");
  EXPECT_EQ(with(54, 0), "setup: port number 0");
  // A rail length that runs into the nonce, whose bytes are not printable.
  EXPECT_EQ(with(55, 3), "setup: bad rail");
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
  EXPECT_EQ(refusal(frame(wire::Type::setup, longer)), "setup: bytes after the MACs");
  // A count of MACs past what any prober holds, or past the payload; none.
  EXPECT_EQ(with(90, 3), "setup: more than 2 MACs");
  EXPECT_EQ(with(90, 2), "setup: truncated");
  auto none = good;
  none.resize(91);
  none[90] = 0;
  EXPECT_EQ(refusal(frame(wire::Type::setup, none)), "");
  // Ending inside the MAC, at its count, before the rail, before the port,
  // inside the peer.
  auto cut = good;
  cut.resize(122);
  EXPECT_EQ(refusal(frame(wire::Type::setup, cut)), "setup: truncated");
  cut.resize(90);
  EXPECT_EQ(refusal(frame(wire::Type::setup, cut)), "setup: truncated");
  cut.resize(72);
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
    payload.resize(payload.size() - 1 - wire::kMacSize);
    payload.insert(payload.begin(), static_cast<uint8_t>(wire::Type::setup));
    EXPECT_EQ(wire::mac_input(s), payload);
  }
  // The type, 47 + 7 (device) + 1 (port) + 1 (no rail) + 16 (nonce) + 18
  // (dialled).
  EXPECT_EQ(wire::mac_input(sample_setup()).size(), 91u);
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
  expect_rejected(1, 'Y', "bad magic");
  expect_rejected(2, 'Q', "bad magic");
  expect_rejected(3, 1, "protocol version 1 not spoken (this is 4)");
  expect_rejected(3, 3, "protocol version 3 not spoken (this is 4)");
  expect_rejected(3, 5, "protocol version 5 not spoken (this is 4)");
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
  const auto most =
      wire::decode_header(std::vector<uint8_t>{'R', 'X', 'P', wire::kVersion, 1, 0, 0x20, 0x00});
  ASSERT_TRUE(most) << most.error().message;
  EXPECT_EQ(most->length, 8192);
  const auto over =
      wire::decode_header(std::vector<uint8_t>{'R', 'X', 'P', wire::kVersion, 1, 0, 0x20, 0x01});
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
  std::vector<uint8_t> over = {'R', 'X', 'P', wire::kVersion, 4, 0, 0, 202, 3};
  over.insert(over.end(), 201, 'r');
  const auto refused = wire::decode(over);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "reject: payload of 202 bytes");
}

TEST(ProbeProtocol, HelloSaysHowManySecretsAndNothingOfThem) {
  // nonce (16 bytes), how many secrets, port count: nothing derived from a
  // secret goes to whoever connects.
  wire::Hello h;
  h.keys = 2;
  auto bytes = wire::encode(h);
  ASSERT_EQ(bytes.size(), wire::kHeaderSize + 18);
  EXPECT_EQ(bytes[wire::kHeaderSize + 16], 2);
  EXPECT_EQ(bytes[wire::kHeaderSize + 17], 0);  // no ports
  auto back = wire::decode(bytes);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(std::get<wire::Hello>(back.value()), h);
  EXPECT_TRUE(std::get<wire::Hello>(back.value()).auth_required());
  EXPECT_FALSE(wire::Hello{}.auth_required());
  // Three are more than a responder ever holds.
  bytes[wire::kHeaderSize + 16] = 3;
  EXPECT_EQ(refusal(bytes), "hello: more than 2 secrets");
  // The encoder says two at most.
  h.keys = 7;
  EXPECT_EQ(wire::encode(h)[wire::kHeaderSize + 16], 2);
}

TEST(ProbeProtocol, EveryTruncationOfEveryMessageIsAnError) {
  wire::Setup by_rail = sample_setup();
  by_rail.device = "";
  by_rail.rail = "10.1.0.0/16";
  const std::vector<wire::Message> messages = {wire::Hello{},
                                               sample_hello(),
                                               sample_setup(),
                                               by_rail,
                                               wire::Accept{sample_setup().peer, {}},
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
  s.macs = {setup_mac(secret, nonce, s)};
  EXPECT_TRUE(mac_valid(secret, nonce, s));
  EXPECT_FALSE(mac_valid(secret + "x", nonce, s));
  Nonce other = nonce;
  other[0] ^= 1;
  EXPECT_FALSE(mac_valid(secret, other, s));
  wire::Setup changed = s;
  changed.size += 1;
  EXPECT_FALSE(mac_valid(secret, nonce, changed));
  changed = s;
  changed.peer.rkey ^= 1;
  EXPECT_FALSE(mac_valid(secret, nonce, changed));
  // Which port the setup asks for is covered too.
  changed = s;
  changed.device = "mlx5_2";
  EXPECT_FALSE(mac_valid(secret, nonce, changed));
  changed = s;
  changed.port = 1;
  EXPECT_FALSE(mac_valid(secret, nonce, changed));
  changed = s;
  changed.rail = "r";
  EXPECT_FALSE(mac_valid(secret, nonce, changed));
  // So are the prober's nonce and the address it dialled.
  changed = s;
  changed.nonce[15] ^= 1;
  EXPECT_FALSE(mac_valid(secret, nonce, changed));
  changed = s;
  changed.dialled.address[15] ^= 1;
  EXPECT_FALSE(mac_valid(secret, nonce, changed));
  changed = s;
  changed.dialled.port ^= 1;
  EXPECT_FALSE(mac_valid(secret, nonce, changed));
  EXPECT_NE(random_nonce(), random_nonce());
}

// An accept's MAC binds it to the set-up (so to both nonces and the
// address) and to the responder's queue pair.
TEST(ProbeAuth, AcceptMacDependsOnSecretSetupAndPeer) {
  const std::string secret = "0123456789abcdef-secret";
  const Mac setup = setup_mac(secret, random_nonce(), sample_setup());
  wire::Accept a;
  a.peer = sample_setup().peer;
  const Mac mac = accept_mac(secret, setup, a);
  EXPECT_NE(accept_mac(secret + "x", setup, a), mac);
  Mac other = setup;
  other[31] ^= 1;
  EXPECT_NE(accept_mac(secret, other, a), mac);
  wire::Accept changed = a;
  changed.peer.qpn ^= 1;
  EXPECT_NE(accept_mac(secret, setup, changed), mac);
  changed = a;
  changed.peer.addr ^= 1;
  EXPECT_NE(accept_mac(secret, setup, changed), mac);
  wire::UdAccept ud;
  ud.peer = {0x123, 0x4567, 9, {}};
  const Mac ud_mac = accept_mac(secret, setup, ud);
  wire::UdAccept ud_changed = ud;
  ud_changed.peer.qkey ^= 1;
  EXPECT_NE(accept_mac(secret, setup, ud_changed), ud_mac);
  EXPECT_TRUE(mac_equal(mac, accept_mac(secret, setup, a)));
  EXPECT_FALSE(mac_equal(mac, other));
  // Every byte counts, the first and the last alike.
  for (const std::size_t at : {std::size_t{0}, std::size_t{15}, mac.size() - 1}) {
    Mac changed_at = mac;
    changed_at[at] ^= 0x01;
    EXPECT_FALSE(mac_equal(mac, changed_at)) << at;
  }
}

// A keyring accepts its current secret, and the previous one until the
// grace period ends; a set-up carries one MAC per secret its prober holds,
// and verifies when any of them is one of the keyring's.
TEST(ProbeAuth, KeyringRotationKeepsThePreviousSecretForTheGracePeriod) {
  using KeyClock = Keyring::Clock;
  const KeyClock::time_point t0{};
  const std::string old_secret = "the-old-secret-0123";
  const std::string new_secret = "the-new-secret-4567";
  Keyring ring(old_secret);
  EXPECT_FALSE(ring.empty());
  EXPECT_EQ(ring.count(t0), 1u);
  EXPECT_TRUE(Keyring().empty());
  EXPECT_EQ(Keyring().count(t0), 0u);
  EXPECT_FALSE(ring.rotate(old_secret, t0 + std::chrono::minutes(1)));  // the same: no change
  ASSERT_TRUE(ring.rotate(new_secret, t0 + std::chrono::minutes(10)));
  const auto during = t0 + std::chrono::minutes(9);
  const auto after = t0 + std::chrono::minutes(10);
  EXPECT_EQ(ring.count(during), 2u);
  EXPECT_EQ(ring.count(after), 1u);
  ASSERT_EQ(ring.secrets(during).size(), 2u);
  EXPECT_EQ(*ring.secrets(during)[0], new_secret);  // the current one first
  EXPECT_EQ(*ring.secrets(during)[1], old_secret);
  EXPECT_TRUE(ring.accepts(old_secret, during));
  EXPECT_FALSE(ring.accepts(old_secret, after));
  EXPECT_TRUE(ring.accepts(new_secret, after));

  // A set-up signed with either secret verifies during the grace period and
  // says which secret and which of its MACs; with the old one only until it
  // ends.
  const Nonce nonce = random_nonce();
  wire::Setup by_old = sample_setup();
  by_old.macs = {setup_mac(old_secret, nonce, by_old)};
  wire::UdSetup by_new = sample_ud_setup();
  by_new.macs = {setup_mac(new_secret, nonce, by_new)};
  auto v = ring.verify(nonce, by_old, during);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v->secret, old_secret);
  EXPECT_EQ(v->mac, by_old.macs[0]);
  EXPECT_FALSE(ring.verify(nonce, by_old, after));
  v = ring.verify(nonce, by_new, after);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v->secret, new_secret);
  EXPECT_FALSE(ring.verify(random_nonce(), by_new, after));

  // A prober in its own grace period signs with both: a responder that has
  // not rotated yet (the old secret only) verifies the second MAC, one
  // that has verifies the first; a MAC of a third secret verifies nothing.
  wire::Setup by_both = sample_setup();
  by_both.macs = {setup_mac(new_secret, nonce, by_both), setup_mac(old_secret, nonce, by_both)};
  const Keyring not_rotated(old_secret);
  v = not_rotated.verify(nonce, by_both, during);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v->secret, old_secret);
  EXPECT_EQ(v->mac, by_both.macs[1]);
  v = ring.verify(nonce, by_both, after);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v->secret, new_secret);
  EXPECT_EQ(v->mac, by_both.macs[0]);
  wire::Setup by_third = sample_setup();
  by_third.macs = {setup_mac("a-third-secret-89ab", nonce, by_third)};
  EXPECT_FALSE(ring.verify(nonce, by_third, during));
  wire::Setup unsigned_setup = sample_setup();
  unsigned_setup.macs = {};
  EXPECT_FALSE(ring.verify(nonce, unsigned_setup, during));

  // Which sessions may go on: made with a secret in use, or without one
  // while there is none.
  EXPECT_TRUE(ring.still_accepts(old_secret, during));
  EXPECT_FALSE(ring.still_accepts(old_secret, after));
  EXPECT_FALSE(ring.still_accepts(std::nullopt, during));
  EXPECT_TRUE(Keyring().still_accepts(std::nullopt, during));
  EXPECT_FALSE(Keyring().still_accepts(new_secret, during));

  // An empty secret ends authentication.
  ASSERT_TRUE(ring.rotate("", during));
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(ring.count(during), 0u);
  EXPECT_FALSE(ring.verify(nonce, by_old, during));
}

// HMAC-SHA256(secret, "setup" || nonce || type 2 || the setup's payload
// without its MAC), with a digest computed independently of the code under
// test (Python's hmac over the bytes of SetupEncodesToTheseBytes without the
// MAC, and a nonce of 0x00..0x0f); then the accept's, HMAC-SHA256(secret,
// "accept" || that MAC || type 3 || the accept's queue pair).
TEST(ProbeAuth, MacsAreHmacSha256OfLabelNonceAndPayload) {
  const std::string secret = "0123456789abcdef-secret";
  Nonce nonce{};
  for (std::size_t i = 0; i < nonce.size(); ++i) nonce[i] = static_cast<uint8_t>(i);
  const Mac want = {0xc2, 0xdd, 0x2a, 0x14, 0x3d, 0xc9, 0xac, 0x6d, 0xb4, 0x25, 0xce,
                    0xff, 0x13, 0xe0, 0x99, 0x78, 0xf2, 0xab, 0x1f, 0x3f, 0x0a, 0xa8,
                    0x29, 0xbc, 0x97, 0xa0, 0xcf, 0xb6, 0xff, 0xb6, 0xdb, 0xb0};
  const Mac setup = setup_mac(secret, nonce, sample_setup());
  EXPECT_EQ(setup, want);
  wire::Accept accept;
  accept.peer = sample_setup().peer;
  accept.mac.fill(0x77);  // not covered
  const Mac want_accept = {0x47, 0xd7, 0x11, 0xfc, 0x35, 0xa7, 0x3c, 0x9c, 0x06, 0xff, 0x12,
                           0x13, 0x97, 0x84, 0x70, 0x14, 0xb9, 0x9a, 0x16, 0x49, 0x50, 0x56,
                           0x71, 0xd0, 0xf3, 0x5e, 0x4e, 0xca, 0x7a, 0xb8, 0xa8, 0x3a};
  EXPECT_EQ(accept_mac(secret, setup, accept), want_accept);
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
  s.interval_ms = 500;
  s.device = "rxe0";
  s.port = 1;
  for (std::size_t i = 0; i < 16; ++i) s.nonce[i] = static_cast<uint8_t>(0xc0 + i);
  s.dialled.address = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 3};
  s.dialled.port = 0x1234;
  s.macs = {{}};
  s.macs[0].fill(0x11);
  return s;
}

TEST(ProbeProtocolUd, UdSetupAndAcceptEncodeToTheseBytes) {
  const auto bytes = wire::encode(sample_ud_setup());
  const std::vector<uint8_t> want = {
      'R',  'X',  'P',  4,    6,    0,    0,    113,  // header: type 6, 113 bytes
      4,                                              // op ud
      0,    0,    0,    64,                           // size
      106,  0,                                        // tclass, sl
      0x04, 0x00,                                     // mtu 1024
      0,    0,    0,    0x11,                         // qpn
      0x11, 0x22, 0x33, 0x44,                         // qkey
      0,    0,                                        // lid
      0,    0,    0,    0,    0,    0,    0,    0,
      0,    0,    0xff, 0xff, 10,   0,    0,    2,  // gid
      0,    0,    0x01, 0xf4,                       // interval 500 ms
      4,    'r',  'x',  'e',  '0',                  // device
      1,                                            // port
      0,                                            // rail: none
      0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7,
      0xc8, 0xc9, 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf,  // the prober's nonce
      0,    0,    0,    0,    0,    0,    0,    0,
      0,    0,    0xff, 0xff, 10,   0,    0,    3,  // dialled
      0x12, 0x34,                                   // its port
      1,                                            // one MAC
  };
  ASSERT_EQ(bytes.size(), want.size() + 32);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), bytes.begin()));
  EXPECT_TRUE(std::all_of(bytes.end() - 32, bytes.end(), [](uint8_t b) { return b == 0x11; }));

  wire::UdAccept accept;
  accept.peer = {0xabcdef, 0x7fffffff, 3, {}};
  accept.mac.fill(0x66);
  const auto a = wire::encode(accept);
  std::vector<uint8_t> want_a = {'R',  'X',  'P',  4,    7, 0, 0, 58, 0, 0xab, 0xcd, 0xef,
                                 0x7f, 0xff, 0xff, 0xff, 0, 3, 0, 0,  0, 0,    0,    0,
                                 0,    0,    0,    0,    0, 0, 0, 0,  0, 0};
  want_a.insert(want_a.end(), 32, 0x66);  // the MAC
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
  s = sample_ud_setup();
  s.interval_ms = 0;
  refused(s, "ud_setup: interval of 0 ms outside 1 ms to 1 h");
  s = sample_ud_setup();
  s.interval_ms = 3'600'001;
  refused(s, "ud_setup: interval of 3600001 ms outside 1 ms to 1 h");
  s.interval_ms = 3'600'000;
  EXPECT_TRUE(wire::decode(wire::encode(s)));
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
  s.macs = {setup_mac(secret, nonce, s)};
  EXPECT_TRUE(mac_valid(secret, nonce, s));
  wire::UdSetup changed = s;
  changed.peer.qkey ^= 1;
  EXPECT_FALSE(mac_valid(secret, nonce, changed));
  changed = s;
  changed.peer.gid[15] ^= 1;
  EXPECT_FALSE(mac_valid(secret, nonce, changed));
  changed = s;
  changed.tclass = 0;
  EXPECT_FALSE(mac_valid(secret, nonce, changed));
  changed = s;
  changed.interval_ms += 1;
  EXPECT_FALSE(mac_valid(secret, nonce, changed));
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
  EXPECT_TRUE(bad(0, 'Q'));  // magic, each of its bytes
  EXPECT_TRUE(bad(1, 'Y'));
  EXPECT_TRUE(bad(2, 'V'));
  EXPECT_TRUE(bad(3, 2));  // version
  EXPECT_TRUE(bad(4, 0));  // kind
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
  reply.flags = wire::kDelayDeviceClock | wire::kResponderStalled;  // 3: both known
  wire::encode_datagram(reply, good);
  ASSERT_TRUE(wire::decode_datagram(good));
  EXPECT_EQ(wire::decode_datagram(good).value().flags, 3);
  reply.flags = 4;
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
  ::chmod(path.c_str(), 0600);
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

// As ssh with a private key: a secret that others may read or change is
// refused; one its group may read is taken (a Kubernetes Secret mounted with
// fsGroup).
TEST(ProbeAuth, SecretFileOthersMayReadIsRefused) {
  const std::string path = ::testing::TempDir() + "/probe_secret_mode";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("a-long-enough-secret\n", f);
  std::fclose(f);
  for (const mode_t mode : {0604, 0602, 0601, 0620, 0666}) {
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
    auto r = read_secret_file(path);
    ASSERT_FALSE(r) << std::oct << mode;
    EXPECT_EQ(r.error().code, EACCES);
    char want[16];
    std::snprintf(want, sizeof want, "mode %04o", static_cast<unsigned>(mode));
    EXPECT_EQ(r.error().message, "probe.secret_file " + path + ": " + want +
                                     " lets other users read or change the secret; make it 0600 "
                                     "or 0640 (chmod o-rwx,g-w)");
  }
  for (const mode_t mode : {0600, 0640, 0400, 0440}) {
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
    auto r = read_secret_file(path);
    ASSERT_TRUE(r) << std::oct << mode << ": " << r.error().message;
    EXPECT_EQ(r.value(), "a-long-enough-secret");
  }
}

}  // namespace
}  // namespace rdma_exporter::probe
