#include <gtest/gtest.h>

#include "collectors/probe/auth.hpp"
#include "collectors/probe/options.hpp"
#include "collectors/probe/protocol.hpp"
#include "collectors/probe/verbs_endpoint.hpp"

namespace rdma_exporter::probe {
namespace {

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
  s.mac.fill(0x5a);
  return s;
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
}

TEST(ProbeProtocol, EveryMessageRoundTrips) {
  wire::Hello hello;
  hello.nonce.fill(9);
  hello.auth_required = true;
  wire::Accept accept;
  accept.peer = sample_setup().peer;
  const std::vector<wire::Message> messages = {hello, sample_setup(), accept,
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
  const auto bytes = wire::encode(wire::Reject{wire::RejectCode::auth, "no"});
  ASSERT_EQ(bytes.size(), wire::kHeaderSize + 3);
  EXPECT_EQ(bytes[0], 'R');
  EXPECT_EQ(bytes[1], 'X');
  EXPECT_EQ(bytes[2], 'P');
  EXPECT_EQ(bytes[3], wire::kVersion);
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
      'R',  'X',  'P',  1,    2,    0,    0x00, 79,  // header: setup, 79 bytes
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
      0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a,
      0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a,
      0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a,  // mac
  };
  EXPECT_EQ(wire::encode(sample_setup()), want);
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
  expect_rejected(3, 2, "version 2");
  expect_rejected(4, 0, "unknown message type 0");
  expect_rejected(4, 99, "unknown message type 99");
  expect_rejected(5, 1, "reserved");
  auto bytes = wire::encode(sample_setup());
  bytes[6] = 0x10;  // 4096 bytes of payload claimed
  auto m = wire::decode(bytes);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("exceeds"), std::string::npos);
  EXPECT_EQ(wire::decode_header(std::vector<uint8_t>{'R', 'X'}).error().message,
            "truncated header");
  EXPECT_EQ(wire::decode_header(wire::encode(sample_setup())).value().type, wire::Type::setup);
  const auto version = wire::decode(std::vector<uint8_t>{'R', 'X', 'P', 9, 5, 0, 0, 0});
  ASSERT_FALSE(version);
  EXPECT_EQ(version.error().code, EPROTONOSUPPORT);
}

TEST(ProbeProtocol, MalformedSetupFieldsAreRefused) {
  const std::size_t p = wire::kHeaderSize;
  expect_rejected(p + 0, 0, "unknown operation");
  expect_rejected(p + 0, 4, "unknown operation");
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
  for (const wire::Message& m : {wire::Message{wire::Hello{}}, wire::Message{sample_setup()},
                                 wire::Message{wire::Keepalive{}}}) {
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
  std::vector<uint8_t> over = {'R', 'X', 'P', 1, 4, 0, 0, 202, 3};
  over.insert(over.end(), 201, 'r');
  const auto refused = wire::decode(over);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "reject: payload of 202 bytes");
}

TEST(ProbeProtocol, HelloFlagsAreChecked) {
  auto bytes = wire::encode(wire::Hello{});
  bytes.back() = 2;
  EXPECT_FALSE(wire::decode(bytes));
}

TEST(ProbeProtocol, EveryTruncationOfEveryMessageIsAnError) {
  const std::vector<wire::Message> messages = {wire::Hello{}, sample_setup(),
                                               wire::Accept{sample_setup().peer},
                                               wire::Reject{wire::RejectCode::auth, "x"}};
  for (const auto& m : messages) {
    const auto bytes = wire::encode(m);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      EXPECT_FALSE(wire::decode(std::span<const uint8_t>(bytes.data(), n))) << n;
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
  EXPECT_NE(random_nonce(), random_nonce());
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
