// exporter/probe/responder: the responder's defences, which refuse before anything is allocated.

#include "exporter/probe/control/responder.hpp"

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>
#include <filesystem>
#include <future>
#include <limits>
#include <thread>

#include "common/yaml_walker.hpp"
#include "exporter/probe/control/channel.hpp"
#include "exporter/probe/control/discovery.hpp"
#include "exporter/probe/plan/targets.hpp"
#include "exporter/probe/probe.hpp"
#include "exporter/probe/stats/health.hpp"
#include "exporter/probe/verbs/device.hpp"
#include "exporter/probe/wire/auth.hpp"
#include "tests/support/control_client.hpp"
#include "tests/support/responder_fixture.hpp"
#include "tests/support/snapshot_query.hpp"
#include "tests/support/wait.hpp"

namespace rdma_exporter::probe {
namespace {

using boost::asio::ip::tcp;
using rdma_exporter::testing::closed_by_peer;
using rdma_exporter::testing::has_family;
using rdma_exporter::testing::metrics_of;
using rdma_exporter::testing::read_message;
using rdma_exporter::testing::sample;
using rdma_exporter::testing::series_count;

// A responder without an RDMA device on a loopback port, and blocking
// clients that talk to it.
class ResponderTest : public rdma_exporter::testing::ResponderFixture {
 protected:
  static wire::RejectCode reject_code(const std::optional<wire::Message>& m) {
    EXPECT_TRUE(m && std::holds_alternative<wire::Reject>(*m));
    return m && std::holds_alternative<wire::Reject>(*m) ? std::get<wire::Reject>(*m).code
                                                         : wire::RejectCode::protocol;
  }

  // A setup for port 1 of mlx5_0.
  static wire::Setup valid_setup() {
    wire::Setup s;
    s.op = Op::write;
    s.size = 64;
    s.peer.qpn = 17;
    s.device = "mlx5_0";
    s.port = 1;
    return s;
  }
  // The same, made for the address `s` is connected to.
  static wire::Setup valid_setup(const tcp::socket& s) {
    wire::Setup setup = valid_setup();
    setup.nonce = random_nonce();
    setup.dialled = dialled_of(s, Side::remote);
    return setup;
  }

  static std::string reject_reason(const std::optional<wire::Message>& m) {
    EXPECT_TRUE(m && std::holds_alternative<wire::Reject>(*m));
    return m && std::holds_alternative<wire::Reject>(*m) ? std::get<wire::Reject>(*m).reason : "";
  }

  // Waits (bounded) until the responder's session count is `n`.
  void wait_sessions(int n) {
    for (int i = 0; i < 500; ++i) {
      if (sample(metrics_of(*stats_), "rdma_probe_responder_sessions") == n) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "sessions never reached " << n;
  }
};

TEST_F(ResponderTest, GarbageClientIsRefusedAndCounted) {
  start({});
  auto s = connect();
  auto hello = read_message(s);
  ASSERT_TRUE(hello && std::holds_alternative<wire::Hello>(*hello));
  EXPECT_FALSE(std::get<wire::Hello>(*hello).auth_required());
  boost::asio::write(s, boost::asio::buffer(std::string("GET / HTTP/1.1\r\nHost: x\r\n\r\n")));
  EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::protocol);
  EXPECT_TRUE(closed_by_peer(s));
  wait_sessions(0);
  EXPECT_EQ(rejected("protocol"), 1);
}

TEST_F(ResponderTest, OtherProtocolVersionIsToldSo) {
  start({});
  auto s = connect();
  read_message(s);
  // A version 1 prober's setup header.
  const std::vector<uint8_t> v1 = {'R', 'X', 'P', 1, 2, 0, 0, 79};
  boost::asio::write(s, boost::asio::buffer(v1));
  const auto answer = read_message(s);
  EXPECT_EQ(reject_code(answer), wire::RejectCode::version);
  EXPECT_EQ(reject_reason(answer), "protocol version 1 not spoken (this is 4)");
  EXPECT_EQ(rejected("version"), 1);
}

// A hello's bytes as sent: the responder speaks version 4, and without an
// RDMA port lists none.
TEST_F(ResponderTest, HelloWithoutPortsListsNone) {
  start({});
  auto s = connect();
  std::array<uint8_t, wire::kHeaderSize + 18> bytes{};
  boost::asio::read(s, boost::asio::buffer(bytes));
  EXPECT_EQ((std::vector<uint8_t>(bytes.begin(), bytes.begin() + 8)),
            (std::vector<uint8_t>{'R', 'X', 'P', 4, 1, 0, 0, 18}));
  EXPECT_EQ(bytes[8 + 16], 0);  // no secrets: no authentication
  EXPECT_EQ(bytes[8 + 17], 0);  // no ports
  // set_ports with none changes nothing.
  boost::asio::post(io_, [this] { responder_->set_ports({}); });
  auto again = connect();
  auto hello = read_message(again);
  ASSERT_TRUE(hello && std::holds_alternative<wire::Hello>(*hello));
  EXPECT_TRUE(std::get<wire::Hello>(*hello).ports.empty());
}

TEST_F(ResponderTest, MessagesOutOfOrderAreRefused) {
  start({});
  auto s = connect();
  read_message(s);
  boost::asio::write(s, boost::asio::buffer(wire::encode(wire::Keepalive{})));
  EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::protocol);
}

TEST_F(ResponderTest, SetupWithoutDeviceIsRefusedWithResources) {
  start({});
  {
    auto s = connect();
    read_message(s);
    boost::asio::write(s, boost::asio::buffer(wire::encode(valid_setup())));
    const auto answer = read_message(s);
    EXPECT_EQ(reject_code(answer), wire::RejectCode::resources);
    EXPECT_EQ(reject_reason(answer), "no RDMA device");
    EXPECT_TRUE(closed_by_peer(s));
  }
  // A setup that names a rail instead of a device: the same.
  auto s = connect();
  read_message(s);
  wire::Setup by_rail = valid_setup();
  by_rail.device = "";
  by_rail.rail = "192.168.100.0/24";
  boost::asio::write(s, boost::asio::buffer(wire::encode(by_rail)));
  const auto answer = read_message(s);
  EXPECT_EQ(reject_code(answer), wire::RejectCode::resources);
  EXPECT_EQ(reject_reason(answer), "no RDMA device");
  EXPECT_EQ(rejected("resources"), 2);
}

// A version 1 setup (no device, port or rail) under a version 4 header is
// malformed.
TEST_F(ResponderTest, SetupWithoutAPortIsAProtocolError) {
  start({});
  auto s = connect();
  read_message(s);
  wire::Setup none = valid_setup();
  none.device = "";
  auto bytes = wire::encode(none);
  ASSERT_EQ(bytes[7], 85);  // 47 + 3 + 16 + 18 + 1 (no MAC)
  boost::asio::write(s, boost::asio::buffer(bytes));
  const auto answer = read_message(s);
  EXPECT_EQ(reject_code(answer), wire::RejectCode::protocol);
  EXPECT_EQ(reject_reason(answer), "setup: names neither a device nor a rail");
  EXPECT_EQ(rejected("protocol"), 1);
}

TEST_F(ResponderTest, OversizedMessagesAreNotOffered) {
  ResponderSettings rs;
  rs.limits.max_message_size = 4096;
  start(rs);
  auto s = connect();
  read_message(s);
  wire::Setup big = valid_setup();
  big.size = 1 << 30;
  boost::asio::write(s, boost::asio::buffer(wire::encode(big)));
  EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::unsupported);
}

TEST_F(ResponderTest, WrongSecretIsRefusedRightOneGetsThrough) {
  const std::string secret = "the-shared-probe-secret";
  ResponderSettings rs;
  rs.keyring = std::make_shared<Keyring>(secret);
  start(rs);
  {
    auto s = connect();
    auto hello = read_message(s);
    ASSERT_TRUE(hello && std::get<wire::Hello>(*hello).auth_required());
    EXPECT_EQ(std::get<wire::Hello>(*hello).keys, 1);
    wire::Setup setup = valid_setup(s);
    setup.macs = {
        setup_mac("a-wrong-secret-of-length", std::get<wire::Hello>(*hello).nonce, setup)};
    boost::asio::write(s, boost::asio::buffer(wire::encode(setup)));
    EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::auth);
  }
  {
    // No MAC at all.
    auto s = connect();
    read_message(s);
    boost::asio::write(s, boost::asio::buffer(wire::encode(valid_setup(s))));
    EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::auth);
  }
  {
    // A MAC for another nonce (a replayed set-up).
    auto s = connect();
    read_message(s);
    wire::Setup setup = valid_setup(s);
    setup.macs = {setup_mac(secret, random_nonce(), setup)};
    boost::asio::write(s, boost::asio::buffer(wire::encode(setup)));
    EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::auth);
  }
  EXPECT_EQ(rejected("auth"), 3);
  auto s = connect();
  auto hello = read_message(s);
  wire::Setup setup = valid_setup(s);
  setup.macs = {setup_mac(secret, std::get<wire::Hello>(*hello).nonce, setup)};
  boost::asio::write(s, boost::asio::buffer(wire::encode(setup)));
  // Authenticated: refused only for want of a device here.
  EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::resources);
}

// A relay between a prober and a real responder (a target list entry that
// points at the relay) passes the responder's hello and the prober's signed
// set-up through: the set-up names the relay's address, so the responder
// refuses it, with or without the prober knowing the secret.
TEST_F(ResponderTest, ASetUpRelayedFromAnotherAddressIsRefused) {
  const std::string secret = "the-shared-probe-secret";
  ResponderSettings rs;
  rs.keyring = std::make_shared<Keyring>(secret);
  start(rs);
  // The relay listens on 127.0.0.2 and forwards whole messages.
  tcp::acceptor relay(client_io_, tcp::endpoint(boost::asio::ip::make_address("127.0.0.2"), 0));
  const auto relay_address = relay.local_endpoint();
  for (const bool knows_secret : {true, false}) {
    tcp::socket prober(client_io_);
    prober.connect(relay_address);
    tcp::socket relayed = relay.accept();
    auto upstream = connect();
    // Responder -> relay -> prober: the hello.
    auto hello = read_message(upstream);
    ASSERT_TRUE(hello);
    boost::asio::write(relayed, boost::asio::buffer(wire::encode(*hello)));
    auto seen = read_message(prober);
    ASSERT_TRUE(seen && std::holds_alternative<wire::Hello>(*seen));
    // The prober signs for the address it dialled: the relay's.
    wire::Setup setup = valid_setup(prober);
    EXPECT_EQ(setup.dialled.port, relay_address.port());
    setup.macs = {setup_mac(knows_secret ? secret : std::string("a-wrong-secret-of-length"),
                            std::get<wire::Hello>(*seen).nonce, setup)};
    boost::asio::write(prober, boost::asio::buffer(wire::encode(setup)));
    auto forwarded = read_message(relayed);
    ASSERT_TRUE(forwarded);
    boost::asio::write(upstream, boost::asio::buffer(wire::encode(*forwarded)));
    const auto answer = read_message(upstream);
    EXPECT_EQ(reject_code(answer), wire::RejectCode::auth);
    EXPECT_EQ(reject_reason(answer),
              knows_secret ? "the set-up was made for another address" : "authentication failed");
  }
  EXPECT_EQ(rejected("relayed"), 1);
  EXPECT_EQ(rejected("auth"), 1);
  // The same prober's set-up made for the responder's own address passes
  // authentication (refused only for want of a device).
  auto s = connect();
  auto hello = read_message(s);
  wire::Setup setup = valid_setup(s);
  setup.macs = {setup_mac(secret, std::get<wire::Hello>(*hello).nonce, setup)};
  boost::asio::write(s, boost::asio::buffer(wire::encode(setup)));
  EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::resources);
}

// A full handshake budget makes room for a newcomer by ending the oldest
// handshake; the session caps are taken at authentication
// (tests/unit/exporter/probe/control/admission_test.cpp).
TEST_F(ResponderTest, AFullHandshakeBudgetEndsTheOldest) {
  ResponderSettings rs;
  rs.limits.max_handshakes = 2;
  start(rs);
  auto a = connect();
  auto b = connect();
  read_message(a);
  read_message(b);
  wait_sessions(2);
  auto c = connect();
  auto hello = read_message(c);
  EXPECT_TRUE(hello && std::holds_alternative<wire::Hello>(*hello));
  EXPECT_TRUE(closed_by_peer(a));
  wait_sessions(2);
  EXPECT_EQ(rejected("handshake_evicted"), 1);
  EXPECT_EQ(rejected("capacity"), 0);
}

TEST_F(ResponderTest, SetupRateIsLimitedPerSource) {
  ResponderSettings rs;
  rs.limits.setups_per_minute_per_source = 3;
  start(rs);
  for (int i = 0; i < 3; ++i) {
    auto s = connect();
    auto hello = read_message(s);
    EXPECT_TRUE(hello && std::holds_alternative<wire::Hello>(*hello)) << i;
  }
  auto s = connect();
  EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::rate);
  EXPECT_EQ(rejected("rate"), 1);
}

TEST_F(ResponderTest, SilentClientIsDroppedAfterTheHandshakeTimeout) {
  ResponderSettings rs;
  rs.limits.handshake_timeout = std::chrono::milliseconds(100);
  start(rs);
  auto s = connect();
  read_message(s);
  EXPECT_TRUE(closed_by_peer(s));
  wait_sessions(0);
  EXPECT_EQ(rejected("handshake_timeout"), 1);
}

TEST_F(ResponderTest, ThousandsOfConnectionsLeaveNothingBehind) {
  ResponderSettings rs;
  rs.limits.setups_per_minute_per_source = 1000000;
  start(rs);
  for (int i = 0; i < 2000; ++i) {
    auto s = connect();
    if (i % 2 == 0) {
      read_message(s);
      boost::asio::write(s, boost::asio::buffer(wire::encode(valid_setup())));
      read_message(s);
    }
  }
  // Connections are admitted in order: once this one is answered, every
  // earlier one has been admitted.
  auto last = connect();
  read_message(last);
  last.close();
  wait_sessions(0);
  std::promise<std::size_t> held;
  boost::asio::post(io_, [&] { held.set_value(responder_->sessions()); });
  EXPECT_EQ(held.get_future().get(), 0u);
  EXPECT_EQ(rejected("resources"), 1000);
}

}  // namespace
}  // namespace rdma_exporter::probe
