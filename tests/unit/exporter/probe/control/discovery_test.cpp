// exporter/probe/discovery: asking a target which ports it has, and every way that fails.

#include "exporter/probe/control/discovery.hpp"

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
#include "exporter/probe/control/responder.hpp"
#include "exporter/probe/plan/targets.hpp"
#include "exporter/probe/probe.hpp"
#include "exporter/probe/stats/health.hpp"
#include "exporter/probe/verbs/device.hpp"
#include "exporter/probe/wire/auth.hpp"
#include "tests/support/closed_port.hpp"
#include "tests/support/control_client.hpp"
#include "tests/support/responder_fixture.hpp"
#include "tests/support/snapshot_query.hpp"
#include "tests/support/wait.hpp"

namespace rdma_exporter::probe {
namespace {

using boost::asio::ip::tcp;
using rdma_exporter::testing::closed_by_peer;
using rdma_exporter::testing::closed_port;
using rdma_exporter::testing::has_family;
using rdma_exporter::testing::metrics_of;
using rdma_exporter::testing::read_message;
using rdma_exporter::testing::sample;
using rdma_exporter::testing::series_count;

// Discovery against real listeners on 127.0.0.1, everything on one event
// loop that the test runs until the handlers have been called.
class ProbeDiscoveryTest : public ::testing::Test {
 protected:
  struct Event {
    bool answered = false;
    std::vector<wire::PortAd> ports;
    std::string reason;
    std::string detail;
  };

  static DiscoverySettings fast() {
    DiscoverySettings s;
    s.interval = std::chrono::milliseconds(1);
    s.backoff_initial = std::chrono::milliseconds(1);
    s.backoff_max = std::chrono::milliseconds(2);
    return s;
  }

  // Discovers `address` until `n` answers or failures have been reported,
  // then stops it.
  std::vector<Event> discover(const std::string& address, std::size_t n,
                              DiscoverySettings settings = fast()) {
    std::vector<Event> events;
    std::shared_ptr<Discovery> d;
    Discovery::Handlers h;
    h.ports = [&](std::vector<wire::PortAd> ports) {
      events.push_back({true, std::move(ports), "", ""});
      if (events.size() == n) d->stop();
    };
    h.failed = [&](const char* why, const std::string& detail) {
      events.push_back({false, {}, why, detail});
      if (events.size() == n) d->stop();
    };
    d = std::make_shared<Discovery>(io_, address, settings, std::move(h));
    d->start();
    run_until([&] { return events.size() >= n; });
    d->stop();
    EXPECT_EQ(events.size(), n);
    return events;
  }

  // Runs the loop's handlers one at a time until `done()`; a bound against
  // hanging, not a timing.
  template <typename Done>
  void run_until(Done done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done()) {
      io_.restart();
      if (io_.run_one_until(deadline) == 0 && std::chrono::steady_clock::now() >= deadline) {
        ADD_FAILURE() << "gave up waiting";
        return;
      }
    }
  }

  // A listener that answers every connection with `answer` and then closes
  // it, or keeps it open saying nothing more when `keep` is set.
  std::string serve(std::vector<uint8_t> answer, bool keep = false) {
    acceptor_.open(tcp::v4());
    acceptor_.bind(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    acceptor_.listen();
    answer_ = std::move(answer);
    keep_ = keep;
    accept();
    return "127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }

  void accept() {
    acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket s) {
      if (ec) return;
      auto socket = std::make_shared<tcp::socket>(std::move(s));
      boost::asio::async_write(*socket, boost::asio::buffer(answer_),
                               [this, socket](const boost::system::error_code&, std::size_t) {
                                 if (keep_) {
                                   kept_.push_back(socket);
                                 } else {
                                   boost::system::error_code ignored;
                                   socket->shutdown(tcp::socket::shutdown_both, ignored);
                                   socket->close(ignored);
                                 }
                               });
      accept();
    });
  }

  boost::asio::io_context io_;
  tcp::acceptor acceptor_{io_};
  std::vector<uint8_t> answer_;
  bool keep_ = false;
  std::vector<std::shared_ptr<tcp::socket>> kept_;
};

// A responder on a host without RDMA answers discovery with a hello that
// lists no ports; discovery asks again after its interval.
TEST_F(ProbeDiscoveryTest, AResponderWithoutRdmaListsNoPorts) {
  auto stats = std::make_shared<ProbeStats>();
  ResponderSettings rs;
  rs.listen_address = "127.0.0.1:0";
  Responder responder(io_, rs, stats);
  ASSERT_TRUE(responder.start());
  const auto events = discover("127.0.0.1:" + std::to_string(responder.port()), 2);
  ASSERT_EQ(events.size(), 2u);
  for (const auto& e : events) {
    EXPECT_TRUE(e.answered) << e.reason << ": " << e.detail;
    EXPECT_TRUE(e.ports.empty());
  }
  // Reading the hello and leaving is not a misbehaving client.
  run_until([&] { return responder.sessions() == 0; });
  EXPECT_FALSE(has_family(metrics_of(*stats), "rdma_probe_responder_rejected_total"));
  responder.stop();
}

TEST_F(ProbeDiscoveryTest, TheTargetsPortsAreReportedAsListed) {
  wire::Hello hello;
  wire::PortAd roce;
  roce.device = "mlx5_0";
  roce.port = 1;
  roce.ethernet = true;
  roce.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 100, 7};
  roce.rail = "192.168.100.0/24";
  wire::PortAd ib;
  ib.device = "mlx5_1";
  ib.port = 2;
  ib.ethernet = false;
  ib.gid = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x02, 0xc9, 0x03, 0, 0x12, 0x34, 0x56};
  ib.rail = "fe80::/64";
  hello.ports = {roce, ib};
  const auto events = discover(serve(wire::encode(hello)), 1);
  ASSERT_EQ(events.size(), 1u);
  ASSERT_TRUE(events[0].answered) << events[0].reason << ": " << events[0].detail;
  EXPECT_EQ(events[0].ports, (std::vector<wire::PortAd>{roce, ib}));
}

TEST_F(ProbeDiscoveryTest, AClosedPortIsRefusedAndAskedAgain) {
  const auto events = discover(closed_port(), 2);
  ASSERT_EQ(events.size(), 2u);
  for (const auto& e : events) {
    EXPECT_FALSE(e.answered);
    EXPECT_EQ(e.reason, "refused");
    EXPECT_EQ(e.detail, "connecting: Connection refused");
  }
}

TEST_F(ProbeDiscoveryTest, SomethingElseOnThePortIsAProtocolError) {
  const auto events =
      discover(serve(std::vector<uint8_t>{'H', 'T', 'T', 'P', '/', '1', '.', '1', ' ', '4', '0',
                                          '0', '\r', '\n', '\r', '\n'}),
               1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_FALSE(events[0].answered);
  EXPECT_EQ(events[0].reason, "protocol");
  EXPECT_EQ(events[0].detail, "not a probe control message (bad magic)");
}

TEST_F(ProbeDiscoveryTest, AMessageOtherThanAHelloIsAProtocolError) {
  const auto events = discover(serve(wire::encode(wire::Keepalive{})), 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, "protocol");
  EXPECT_EQ(events[0].detail, "expected a hello");
}

TEST_F(ProbeDiscoveryTest, AnOlderProbeIsAProtocolError) {
  // A version 1 hello: nonce and flags.
  std::vector<uint8_t> v1 = {'R', 'X', 'P', 1, 1, 0, 0, 17};
  v1.resize(8 + 17);
  const auto events = discover(serve(v1), 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, "protocol");
  EXPECT_EQ(events[0].detail, "protocol version 1 not spoken (this is 4)");
}

TEST_F(ProbeDiscoveryTest, AVersion2ProbeIsAProtocolError) {
  // A version 2 hello: nonce, flags and no ports.
  std::vector<uint8_t> v2 = {'R', 'X', 'P', 2, 1, 0, 0, 18};
  v2.resize(8 + 18);
  const auto events = discover(serve(v2), 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, "protocol");
  EXPECT_EQ(events[0].detail, "protocol version 2 not spoken (this is 4)");
}

TEST_F(ProbeDiscoveryTest, AResponderAtCapacityRejects) {
  auto stats = std::make_shared<ProbeStats>();
  ResponderSettings rs;
  rs.listen_address = "127.0.0.1:0";
  rs.limits.max_handshakes = 0;  // not even a handshake may start
  Responder responder(io_, rs, stats);
  ASSERT_TRUE(responder.start());
  const auto events = discover("127.0.0.1:" + std::to_string(responder.port()), 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, "rejected");
  EXPECT_EQ(events[0].detail, "refused: capacity");
  responder.stop();
}

TEST_F(ProbeDiscoveryTest, ClosedWithoutAWordIsDisconnected) {
  const auto events = discover(serve({}), 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, "disconnected");
  EXPECT_EQ(events[0].detail, "control connection: connection closed by peer");
}

TEST_F(ProbeDiscoveryTest, NoHelloWithinTheConnectTimeout) {
  DiscoverySettings s = fast();
  s.connect_timeout = std::chrono::milliseconds(50);
  // Half a hello, then silence.
  const auto events = discover(serve({'R', 'X', 'P', 2}, true), 1, s);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, "connect_timeout");
  EXPECT_EQ(events[0].detail, "no hello within the connect timeout");
}

TEST_F(ProbeDiscoveryTest, AnAddressThatIsNotHostPortIsUnreachable) {
  for (const char* address : {"no-port", ":10911"}) {
    const auto events = discover(address, 1);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].reason, "unreachable");
    EXPECT_EQ(events[0].detail, "target address is not host:port");
  }
}
}  // namespace
}  // namespace rdma_exporter::probe
