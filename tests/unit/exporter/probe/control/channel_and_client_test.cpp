// The probe's control channel on real loopback sockets: writes queue one at
// a time with a bound, whatever the peer does, and a session's keep-alive
// loop ends a peer that does not read.

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "exporter/probe/control/channel.hpp"
#include "exporter/probe/control/client.hpp"
#include "exporter/probe/wire/auth.hpp"
#include "tests/support/control_client.hpp"
#include "tests/support/snapshot_query.hpp"

namespace rdma_exporter::probe {
namespace {

using boost::asio::ip::tcp;

// Both ends of a loopback connection, with small kernel buffers so that a
// peer that does not read stops the writer after a few KiB.
struct Pair {
  tcp::socket server;
  tcp::socket client;
};

Pair connected(boost::asio::io_context& io) {
  tcp::acceptor acceptor(io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  tcp::socket client(io);
  client.open(tcp::v4());
  client.set_option(boost::asio::socket_base::receive_buffer_size(4096));
  client.connect(acceptor.local_endpoint());
  tcp::socket server = acceptor.accept();
  server.set_option(boost::asio::socket_base::send_buffer_size(4096));
  return Pair{std::move(server), std::move(client)};
}

// A hello of 4.7 KB whose nonce says which message it is.
wire::Hello numbered_hello(uint8_t n) {
  wire::Hello h;
  h.nonce.fill(n);
  for (std::size_t i = 0; i < wire::kMaxPorts; ++i) {
    wire::PortAd p;
    p.device = std::string(wire::kMaxNameSize - 2, 'd') + std::to_string(i % 10) + "x";
    p.port = static_cast<uint8_t>(i + 1);
    p.gid.fill(static_cast<uint8_t>(i * 7 + n));
    p.rail = std::string(wire::kMaxNameSize, 'r');
    h.ports.push_back(p);
  }
  return h;
}

TEST(ControlChannelTest, WritesPastTheBoundFailAndNothingSentIsTorn) {
  boost::asio::io_context io;
  Pair pair = connected(io);
  auto channel = std::make_shared<ControlChannel>(std::move(pair.server));
  constexpr int kWrites = 40;
  std::vector<std::optional<Status>> done(kWrites);
  for (int i = 0; i < kWrites; ++i) {
    channel->write(numbered_hello(static_cast<uint8_t>(i)), [&done, i](Status s) {
      EXPECT_FALSE(done[static_cast<std::size_t>(i)].has_value()) << "handler " << i << " twice";
      done[static_cast<std::size_t>(i)] = std::move(s);
    });
    // No handler runs inside write().
    EXPECT_FALSE(done[static_cast<std::size_t>(i)].has_value()) << i;
  }
  // The ninth write found eight unsent: the peer does not read.
  EXPECT_TRUE(channel->closed());

  // The peer reads what was sent, until the connection ends.
  std::vector<uint8_t> received;
  std::thread reader([&] {
    std::array<uint8_t, 4096> buf{};
    boost::system::error_code ec;
    for (;;) {
      const std::size_t n = pair.client.read_some(boost::asio::buffer(buf), ec);
      if (ec) break;
      received.insert(received.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
    }
  });
  io.run();
  reader.join();

  for (int i = 0; i < kWrites; ++i) {
    ASSERT_TRUE(done[static_cast<std::size_t>(i)].has_value()) << "handler " << i << " never ran";
  }
  ASSERT_FALSE(*done[8]);
  EXPECT_EQ(done[8]->error().code, ENOBUFS);
  EXPECT_EQ(done[8]->error().message,
            "control connection: the peer does not read (8 messages unsent)");
  for (int i = 9; i < kWrites; ++i) {
    ASSERT_FALSE(*done[static_cast<std::size_t>(i)]) << i;
    EXPECT_EQ(done[static_cast<std::size_t>(i)]->error().code, ECANCELED) << i;
  }

  // What arrived is whole messages 0, 1, 2, ... in order, then perhaps the
  // start of the next: never bytes of another message or of freed memory.
  std::size_t at = 0;
  int whole = 0;
  for (int i = 0; i < 8; ++i) {
    const std::vector<uint8_t> want = wire::encode(numbered_hello(static_cast<uint8_t>(i)));
    const std::size_t n = std::min(want.size(), received.size() - at);
    ASSERT_TRUE(std::equal(want.begin(), want.begin() + static_cast<std::ptrdiff_t>(n),
                           received.begin() + static_cast<std::ptrdiff_t>(at)))
        << "message " << i << " differs from what was written";
    at += n;
    if (n < want.size()) break;
    ++whole;
    // A message reported sent arrived whole.
  }
  EXPECT_EQ(at, received.size()) << "bytes after the messages written";
  for (int i = 0; i < 8; ++i) {
    if (*done[static_cast<std::size_t>(i)]) {
      EXPECT_LT(i, whole) << "message " << i << " reported sent but did not arrive whole";
    }
  }
}

TEST(ControlChannelTest, QueuedWritesAreSentInOrderToAReadingPeer) {
  boost::asio::io_context io;
  Pair pair = connected(io);
  auto channel = std::make_shared<ControlChannel>(std::move(pair.server));
  std::vector<int> order;
  // Seven messages and a keep-alive: as many as may be unsent at once.
  for (int i = 0; i < 7; ++i) {
    channel->write(numbered_hello(static_cast<uint8_t>(100 + i)), [&order, i](Status s) {
      EXPECT_TRUE(s) << i;
      order.push_back(i);
    });
  }
  // A handler that writes again only queues behind what is still unsent.
  channel->write(wire::Keepalive{}, [&](Status s) {
    EXPECT_TRUE(s);
    order.push_back(7);
    channel->write(wire::Keepalive{}, [&](Status s2) {
      EXPECT_TRUE(s2);
      order.push_back(8);
    });
  });
  EXPECT_FALSE(channel->closed());
  EXPECT_EQ(channel->queued(), kMaxQueuedWrites);
  std::vector<wire::Message> got;
  std::thread reader([&] {
    for (int i = 0; i < 9; ++i) {
      std::array<uint8_t, wire::kHeaderSize> header{};
      boost::asio::read(pair.client, boost::asio::buffer(header));
      auto h = wire::decode_header(header);
      ASSERT_TRUE(h);
      std::vector<uint8_t> payload(h->length);
      boost::asio::read(pair.client, boost::asio::buffer(payload));
      auto m = wire::decode_payload(h->type, payload);
      ASSERT_TRUE(m);
      got.push_back(*m);
    }
  });
  io.run();
  reader.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  ASSERT_EQ(got.size(), 9u);
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(got[static_cast<std::size_t>(i)],
              wire::Message{numbered_hello(static_cast<uint8_t>(100 + i))})
        << i;
  }
  EXPECT_EQ(got[7], wire::Message{wire::Keepalive{}});
  EXPECT_EQ(got[8], wire::Message{wire::Keepalive{}});
}

// A session holds its channel and its write handlers hold the session:
// when the event loop stops before an aborted write completes (the probe
// stopping), nothing may keep the two alive.
TEST(ControlChannelTest, AClosedChannelKeepsNoHandler) {
  std::weak_ptr<ControlChannel> weak;
  int ran = 0;
  {
    boost::asio::io_context io;
    Pair pair = connected(io);
    auto channel = std::make_shared<ControlChannel>(std::move(pair.server));
    weak = channel;
    for (int i = 0; i < 3; ++i) {
      channel->write(numbered_hello(static_cast<uint8_t>(i)), [channel, &ran](Status) { ++ran; });
    }
    channel->close();
    EXPECT_EQ(channel->queued(), 3u);  // the bytes stay until the write completes
  }                                    // the loop never ran again
  EXPECT_TRUE(weak.expired()) << "a closed channel and its handlers keep each other alive";
  EXPECT_EQ(ran, 0);
}

// After close(), every write handler runs once, with ECANCELED, also those
// of messages queued behind the one on the socket.
TEST(ControlChannelTest, CloseCancelsEveryQueuedWriteOnce) {
  boost::asio::io_context io;
  Pair pair = connected(io);
  auto channel = std::make_shared<ControlChannel>(std::move(pair.server));
  std::vector<int> codes(4, -1);
  for (int i = 0; i < 4; ++i) {
    channel->write(numbered_hello(static_cast<uint8_t>(i)), [&codes, i](Status s) {
      EXPECT_EQ(codes[static_cast<std::size_t>(i)], -1) << "handler " << i << " twice";
      codes[static_cast<std::size_t>(i)] = s ? 0 : s.error().code;
    });
  }
  channel->close();
  io.run();
  EXPECT_EQ(codes, (std::vector<int>{ECANCELED, ECANCELED, ECANCELED, ECANCELED}));
}

TEST(ControlChannelTest, ASecondConcurrentReadIsRefused) {
  boost::asio::io_context io;
  Pair pair = connected(io);
  auto channel = std::make_shared<ControlChannel>(std::move(pair.server));
  std::optional<Result<wire::Message>> first;
  std::optional<Result<wire::Message>> second;
  channel->read([&](Result<wire::Message> m) { first = std::move(m); });
  channel->read([&](Result<wire::Message> m) { second = std::move(m); });
  boost::asio::write(pair.client, boost::asio::buffer(wire::encode(wire::Keepalive{})));
  io.run();
  ASSERT_TRUE(second.has_value());
  ASSERT_FALSE(*second);
  EXPECT_EQ(second->error().code, EBUSY);
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(*first);
  EXPECT_EQ(first->value(), wire::Message{wire::Keepalive{}});
}

// A prober that sends keep-alives as fast as it can and never reads the
// answers: the responder's loop ends it once the answers back up, having
// held at most kMaxQueuedWrites of them.
TEST(KeepaliveLoopTest, APeerThatDoesNotReadIsEndedWithBoundedMemory) {
  boost::asio::io_context io;
  Pair pair = connected(io);
  auto channel = std::make_shared<ControlChannel>(std::move(pair.server));
  std::optional<KeepaliveEnd> ended;
  long alive = 0;
  std::size_t most_queued = 0;
  serve_keepalives(
      channel,
      [&] {
        ++alive;
        most_queued = std::max(most_queued, channel->queued());
      },
      [&](KeepaliveEnd why) {
        EXPECT_FALSE(ended.has_value()) << "ended twice";
        ended = why;
        channel->close();
      });
  std::thread io_thread([&] { io.run(); });

  // 512 keep-alives a write, at most 16 MB in all.
  const std::vector<uint8_t> one = wire::encode(wire::Keepalive{});
  std::vector<uint8_t> batch;
  for (int i = 0; i < 512; ++i) batch.insert(batch.end(), one.begin(), one.end());
  long sent = 0;
  boost::system::error_code ec;
  for (int i = 0; i < 4096 && !ec; ++i) {
    boost::asio::write(pair.client, boost::asio::buffer(batch), ec);
    if (!ec) sent += 512;
  }
  io_thread.join();
  EXPECT_TRUE(ec) << "the responder never closed a peer that does not read";
  ASSERT_TRUE(ended.has_value());
  EXPECT_EQ(*ended, KeepaliveEnd::backlog);
  EXPECT_GT(alive, 0);
  EXPECT_LE(most_queued, kMaxQueuedWrites);
  EXPECT_LT(alive, sent + 1);
}

TEST(KeepaliveLoopTest, AnotherMessageIsAProtocolEndAndAClosedPeerIsClosed) {
  {
    boost::asio::io_context io;
    Pair pair = connected(io);
    auto channel = std::make_shared<ControlChannel>(std::move(pair.server));
    std::vector<KeepaliveEnd> ends;
    int alive = 0;
    serve_keepalives(
        channel, [&] { ++alive; },
        [&](KeepaliveEnd why) {
          ends.emplace_back(why);
          channel->close();
        });
    auto two = wire::encode(wire::Keepalive{});
    const auto k = two;
    two.insert(two.end(), k.begin(), k.end());
    const auto reject = wire::encode(wire::Reject{wire::RejectCode::rate, "x"});
    two.insert(two.end(), reject.begin(), reject.end());
    boost::asio::write(pair.client, boost::asio::buffer(two));
    io.run();
    EXPECT_EQ(alive, 2);
    EXPECT_EQ(ends, (std::vector<KeepaliveEnd>{KeepaliveEnd::protocol}));
  }
  {
    boost::asio::io_context io;
    Pair pair = connected(io);
    auto channel = std::make_shared<ControlChannel>(std::move(pair.server));
    std::vector<KeepaliveEnd> ends;
    serve_keepalives(
        channel, [] {},
        [&](KeepaliveEnd why) {
          ends.emplace_back(why);
          channel->close();
        });
    pair.client.close();
    io.run();
    EXPECT_EQ(ends, (std::vector<KeepaliveEnd>{KeepaliveEnd::closed}));
  }
}

// The prober's end: a control client whose set-up is a UD one (no verbs
// needed to make it), against a responder played by the test.
class UdSetupClient : public ControlClient {
 public:
  static std::shared_ptr<UdSetupClient> make(boost::asio::io_context& io,
                                             const std::string& address, ProberSettings settings,
                                             std::shared_ptr<SeriesStats> stats) {
    wire::PortAd remote;
    remote.device = "mlx5_0";
    remote.port = 1;
    return std::shared_ptr<UdSetupClient>(
        new UdSetupClient(io, address, remote, std::move(settings), std::move(stats)));
  }
  // "accepted" or "failed": what became of the first session.
  std::promise<std::string> outcome;

 protected:
  UdSetupClient(boost::asio::io_context& io, const std::string& address, wire::PortAd remote,
                ProberSettings settings, std::shared_ptr<SeriesStats> stats)
      : ControlClient(io, address, std::move(remote), "test", std::move(settings),
                      std::move(stats)) {}
  void on_hello() override {
    wire::UdSetup s;
    s.size = 64;
    s.peer = {0x22, 0x1234, 0, {}};
    s.device = "mlx5_0";
    s.port = 1;
    send_setup(std::move(s));
  }
  void on_accept(const wire::Message&) override {
    settle("accepted");
    established();
  }
  void on_teardown() override {
    ++teardowns;
    settle("failed");
  }

 public:
  int teardowns = 0;  // sessions torn down, stop() included

 private:
  void settle(const std::string& what) {
    if (settled_) return;
    settled_ = true;
    outcome.set_value(what);
  }
  bool settled_ = false;
};

class MutualAuthTest : public ::testing::Test {
 protected:
  // What a responder played here says, and how the prober takes it.
  struct Play {
    std::vector<std::string> responder_secrets;  // how many go in the hello
    std::string accept_secret;   // signs the accept over its own set-up MAC ("" leaves it zero)
    bool tamper_accept = false;  // the accept's queue pair changed after signing
    // A reload of the prober's keyring on its loop, after the set-up came
    // and before the accept goes.
    std::function<void(Keyring&)> reload_before_accept;
  };
  struct Seen {
    std::string outcome;
    std::optional<wire::UdSetup> setup;
    Nonce hello_nonce{};
    double auth_errors = 0;
    double retired_errors = 0;
    int teardowns_after = 0;  // by `then`
  };

  // `then` runs on the prober's loop once the session is accepted (a
  // reload's keyring change, say); teardowns_after counts what it ended.
  Seen run(const std::shared_ptr<Keyring>& prober_keys, const Play& play,
           const std::function<void(ControlClient&)>& then = nullptr) {
    boost::asio::io_context io;
    tcp::acceptor acceptor(io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    const unsigned short port = acceptor.local_endpoint().port();
    ProberSettings settings;
    settings.keyring = prober_keys;
    settings.backoff_initial = std::chrono::hours(1);  // one attempt
    auto stats = std::make_shared<SeriesStats>(Labels{{"target", "t"}});
    auto client = UdSetupClient::make(io, "127.0.0.1:" + std::to_string(port), settings, stats);
    auto outcome = client->outcome.get_future();
    Seen seen;
    std::thread responder([&] {
      tcp::socket s = acceptor.accept();
      wire::Hello hello;
      hello.nonce = random_nonce();
      seen.hello_nonce = hello.nonce;
      hello.keys = static_cast<uint8_t>(play.responder_secrets.size());
      wire::PortAd listed;
      listed.device = "mlx5_0";
      listed.port = 1;
      listed.rail = "rail0";
      hello.ports = {listed};
      boost::asio::write(s, boost::asio::buffer(wire::encode(hello)));
      auto m = testing::read_message(s);
      if (!m) return;  // the prober left after the hello
      seen.setup = std::get<wire::UdSetup>(*m);
      wire::UdAccept accept;
      accept.peer = {0x33, 0x5678, 0, {}};
      if (!play.accept_secret.empty()) {
        // Over the set-up MAC its secret made, as a responder that verified
        // it does (the first, when none did).
        Mac over = seen.setup->macs.empty() ? Mac{} : seen.setup->macs.front();
        for (const Mac& made : seen.setup->macs) {
          if (made == setup_mac(play.accept_secret, hello.nonce, *seen.setup)) over = made;
        }
        accept.mac = accept_mac(play.accept_secret, over, accept);
      }
      if (play.tamper_accept) accept.peer.qpn = 0x44;
      if (play.reload_before_accept) {
        std::promise<void> reloaded;
        boost::asio::post(io, [&] {
          play.reload_before_accept(*prober_keys);
          reloaded.set_value();
        });
        reloaded.get_future().wait();
      }
      boost::asio::write(s, boost::asio::buffer(wire::encode(accept)));
      // Hold the connection until the prober has made up its mind.
      testing::closed_by_peer(s);
    });
    boost::asio::post(io, [client] { client->start(); });
    std::thread loop([&] { io.run(); });
    seen.outcome = outcome.get();
    if (then && seen.outcome == "accepted") {
      std::promise<int> ended;
      boost::asio::post(io, [&] {
        const int before = client->teardowns;
        then(*client);
        ended.set_value(client->teardowns - before);
      });
      seen.teardowns_after = ended.get_future().get();
    }
    boost::asio::post(io, [client] { client->stop(); });
    boost::asio::post(io, [&] { acceptor.close(); });
    loop.join();
    responder.join();
    const double auth = testing::sample(testing::metrics_of(*stats), "rdma_probe_errors_total",
                                        {{"reason", "auth"}});
    seen.auth_errors = std::isnan(auth) ? 0 : auth;
    const double retired = testing::sample(testing::metrics_of(*stats), "rdma_probe_errors_total",
                                           {{"reason", "retired_secret"}});
    seen.retired_errors = std::isnan(retired) ? 0 : retired;
    return seen;
  }

  const std::string secret_ = "the-shared-probe-secret";
};

TEST_F(MutualAuthTest, AnAcceptSignedWithTheSecretIsTaken) {
  const Seen seen = run(std::make_shared<Keyring>(secret_), {{secret_}, secret_, false});
  EXPECT_EQ(seen.outcome, "accepted");
  EXPECT_EQ(seen.auth_errors, 0);
  ASSERT_TRUE(seen.setup);
  // The set-up names the address dialled and carries a nonce of its own.
  EXPECT_EQ(seen.setup->dialled.address,
            (std::array<uint8_t, 16>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1}));
  EXPECT_NE(seen.setup->nonce, Nonce{});
}

TEST_F(MutualAuthTest, AResponderThatCannotProveTheSecretIsRefused) {
  // Its accept is signed with another secret, unsigned, or changed after
  // signing: a relay or an impostor that learnt the nonce but not the secret.
  for (const Play& play : {Play{{secret_}, "another-secret-of-length", false},
                           Play{{secret_}, "", false}, Play{{secret_}, secret_, true}}) {
    const Seen seen = run(std::make_shared<Keyring>(secret_), play);
    EXPECT_EQ(seen.outcome, "failed") << play.accept_secret;
    EXPECT_EQ(seen.auth_errors, 1) << play.accept_secret;
  }
}

TEST_F(MutualAuthTest, AProberWithASecretNeedsAResponderWithOne) {
  // A responder that asks for no secret cannot prove one.
  Seen seen = run(std::make_shared<Keyring>(secret_), {{}, "", false});
  EXPECT_EQ(seen.outcome, "failed");
  EXPECT_EQ(seen.auth_errors, 1);
  EXPECT_FALSE(seen.setup) << "a set-up was sent to a responder that proves nothing";
  // One that holds only a secret this prober does not: the hello does not
  // tell (it names no secret), the accept it can sign proves nothing.
  seen = run(std::make_shared<Keyring>(secret_),
             {{"a-third-secret-89ab"}, "a-third-secret-89ab", false});
  EXPECT_EQ(seen.outcome, "failed");
  EXPECT_EQ(seen.auth_errors, 1);
  ASSERT_TRUE(seen.setup);
  // Without a secret, the prober signs nothing and does not check the accept.
  seen = run(nullptr, {{}, "", false});
  EXPECT_EQ(seen.outcome, "accepted");
  ASSERT_TRUE(seen.setup);
  EXPECT_TRUE(seen.setup->macs.empty());
}

TEST_F(MutualAuthTest, DuringARotationTheProberSignsWithBothSecrets) {
  // This prober rotated to a new secret; the responder has not yet.
  auto keys = std::make_shared<Keyring>(secret_);
  keys->rotate("the-next-probe-secret", Keyring::Clock::now() + std::chrono::hours(1));
  Seen seen = run(keys, {{secret_}, secret_, false});
  EXPECT_EQ(seen.outcome, "accepted");
  ASSERT_TRUE(seen.setup);
  ASSERT_EQ(seen.setup->macs.size(), 2u);
  EXPECT_EQ(seen.setup->macs[0], setup_mac("the-next-probe-secret", seen.hello_nonce, *seen.setup));
  EXPECT_EQ(seen.setup->macs[1], setup_mac(secret_, seen.hello_nonce, *seen.setup));
  // One that rotated too proves the new one.
  seen = run(keys, {{"the-next-probe-secret", secret_}, "the-next-probe-secret", false});
  EXPECT_EQ(seen.outcome, "accepted");
}

// A reload while the set-up is on its way: the session does not start
// under a keyring that would not make it.
TEST_F(MutualAuthTest, AReloadDuringTheSetUpIsHeldToTheNewKeyring) {
  auto keys = std::make_shared<Keyring>(secret_);
  Play play{{secret_}, secret_, false};
  play.reload_before_accept = [](Keyring& k) {
    k.rotate("the-next-probe-secret", Keyring::Clock::now());  // no grace
  };
  Seen seen = run(keys, play);
  EXPECT_EQ(seen.outcome, "failed");
  EXPECT_EQ(seen.retired_errors, 1);
  EXPECT_EQ(seen.auth_errors, 0);
  // A rotation with a grace period keeps it.
  keys = std::make_shared<Keyring>(secret_);
  play.reload_before_accept = [](Keyring& k) {
    k.rotate("the-next-probe-secret", Keyring::Clock::now() + std::chrono::hours(1));
  };
  seen = run(keys, play);
  EXPECT_EQ(seen.outcome, "accepted");
  EXPECT_EQ(seen.retired_errors, 0);
}

// A reload changes the keyring a session was set up under: the prober ends
// the sessions the keyring in force would not set up, and only those.
TEST_F(MutualAuthTest, TheProberEndsSessionsItsKeyringNoLongerMakes) {
  const auto now = [] { return Keyring::Clock::now(); };
  const std::string next = "the-next-probe-secret";
  struct Case {
    const char* name;
    std::shared_ptr<Keyring> keys;  // the prober's at the set-up
    Play play;
    std::function<void(Keyring&)> reload;
    int ended;
  };
  const Case cases[] = {
      {"rotated, in its grace period: kept",
       std::make_shared<Keyring>(secret_),
       {{secret_}, secret_, false},
       [&](Keyring& k) { k.rotate(next, now() + std::chrono::hours(1)); },
       0},
      {"rotated, the grace period over: ended",
       std::make_shared<Keyring>(secret_),
       {{secret_}, secret_, false},
       [&](Keyring& k) { k.rotate(next, now()); },
       1},
      {"the secret removed: ended",
       std::make_shared<Keyring>(secret_),
       {{secret_}, secret_, false},
       [&](Keyring& k) { k.rotate("", now()); },
       1},
      {"a secret turned on: the unauthenticated session ended",
       std::make_shared<Keyring>(),
       {{}, "", false},
       [&](Keyring& k) { k.rotate(secret_, now()); },
       1},
      {"nothing changed: kept",
       std::make_shared<Keyring>(secret_),
       {{secret_}, secret_, false},
       [](Keyring&) {},
       0},
      {"made with the new secret, the old one retired: kept",
       [&] {
         auto k = std::make_shared<Keyring>(secret_);
         k->rotate(next, now() + std::chrono::hours(1));
         return k;
       }(),
       {{next}, next, false},
       [&](Keyring& k) { k = Keyring(next); },  // the old one's grace over
       0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto keys = c.keys;
    const Seen seen = run(keys, c.play, [&](ControlClient& client) {
      c.reload(*keys);
      client.recheck_secret();
    });
    ASSERT_EQ(seen.outcome, "accepted");
    EXPECT_EQ(seen.teardowns_after, c.ended);
    EXPECT_EQ(seen.retired_errors, c.ended);
  }
}

}  // namespace
}  // namespace rdma_exporter::probe
