// The UD prober's state machine through a fake UD port (no device): what it
// sets up and sends, how replies are timed, which probes are lost on which
// path, and what each kind of failure counts and does. The control
// connection is real (loopback TCP to a responder played on the same event
// loop).

#include "exporter/probe/probers/ud_prober.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/fake_responder.hpp"
#include "tests/support/run_until.hpp"
#include "tests/support/snapshot_query.hpp"
#include "tests/support/stalls.hpp"

namespace rdma_exporter::probe {
namespace {

struct Request {
  uint32_t session = 0;
  wire::Datagram datagram;
  uint32_t size = 0;
  uint8_t sl = 0;
};

class FakeUdPort final : public UdProbePort {
 public:
  wire::UdPeer address() const override {
    wire::UdPeer p;
    p.qpn = 0x4321;
    p.qkey = 0x11223344;
    p.lid = 0x55;
    p.gid.fill(0x66);
    return p;
  }
  bool working() const override { return working_; }
  uint32_t open_session(Session session) override {
    opened.push_back(next_);
    sessions[next_] = std::move(session);
    return next_++;
  }
  void close_session(uint32_t id) override {
    closed.push_back(id);
    sessions.erase(id);
  }
  Status send_request(uint32_t id, const wire::Datagram& request, uint32_t size,
                      uint8_t sl) override {
    requests.push_back({id, request, size, sl});
    if (!send_errors.empty()) {
      Error e = send_errors.front();
      send_errors.pop_front();
      return e;
    }
    if (on_send) on_send(id, request);
    return ok_status();
  }
  void spin(std::chrono::microseconds, const std::function<bool()>&) override { ++spins; }
  uint64_t clock_khz() const override { return khz; }

  bool working_ = true;
  uint64_t khz = 0;
  std::map<uint32_t, Session> sessions;
  std::vector<uint32_t> opened;
  std::vector<uint32_t> closed;
  std::vector<Request> requests;
  std::deque<Error> send_errors;
  std::function<void(uint32_t session, const wire::Datagram& request)> on_send;
  int spins = 0;

 private:
  uint32_t next_ = 7;
};

testing::HistogramSample histogram(const HistogramStats& h) {
  for (const auto& f : testing::metrics_of(h).families) {
    if (f.metric.size() == 1) {
      return {f.metric[0].histogram.sample_count, f.metric[0].histogram.sample_sum};
    }
  }
  return {};
}

class UdProberTest : public ::testing::Test {
 protected:
  UdProberTest() {
    remote_.device = "mlx5_3";
    remote_.port = 2;
    remote_.rail = "rail1";
    accepted_.qpn = 0x2345;
    accepted_.qkey = 0x0bad'cafe;
    accepted_.lid = 0x0a0b;
    accepted_.gid.fill(0x5c);
    // As the service makes them, but with rdma_probe_up to read.
    stats_.pair = std::make_shared<SeriesStats>(Labels{{"target", "t"}}, SeriesShape{false, true});
    stats_.latency = std::make_shared<HistogramStats>("l", "l", Labels{});
    stats_.responder_delay = std::make_shared<HistogramStats>("r", "r", Labels{});
    stats_.prober_delay = std::make_shared<HistogramStats>("p", "p", Labels{});
  }

  ~UdProberTest() override {
    if (prober_) prober_->stop();
    if (responder_) responder_->stop();
    io_.restart();
    io_.run_for(std::chrono::seconds(5));
  }

  static ProbeClass ud_class() {
    ProbeClass c;
    c.name = "u";
    c.op = Op::ud;
    c.size = 128;
    c.tclass = 0x48;
    c.sl = 2;
    c.mtu = 4096;
    c.interval = std::chrono::milliseconds(3);
    c.timeout = std::chrono::seconds(30);
    c.flows = 3;
    return c;
  }

  void start(const ProbeClass& cls) {
    responder_ = std::make_unique<testing::FakeResponder>(
        io_, remote_, [this](const wire::Message&) -> std::optional<wire::Message> {
          return wire::UdAccept{accepted_, {}};
        });
    ProberSettings settings;
    settings.backoff_initial = std::chrono::milliseconds(1);
    settings.backoff_max = std::chrono::milliseconds(2);
    settings.device_suspect = [this] { ++suspected_; };
    prober_ = std::make_shared<UdProber>(io_, "fake0/1", port_, responder_->address(), remote_, cls,
                                         settings, stats_);
    prober_->start();
  }

  // The responder's reply to `request`, from the event loop: its receive
  // completion at `ticks`, taken from the queue at `polled`.
  void reply_later(uint32_t session, wire::Datagram request, std::optional<uint64_t> ticks,
                   uint64_t responder_delay_ns,
                   std::optional<std::chrono::steady_clock::time_point> polled = {},
                   uint8_t flags = 0) {
    boost::asio::post(io_, [this, session, request, ticks, responder_delay_ns, polled, flags] {
      ++delivered_;
      auto it = port_->sessions.find(session);
      if (it == port_->sessions.end()) return;
      UdReply reply;
      reply.datagram = request;
      reply.datagram.kind = wire::DatagramKind::reply;
      reply.datagram.responder_delay_ns = responder_delay_ns;
      reply.datagram.flags = flags;
      reply.ticks = ticks;
      reply.polled = polled.value_or(std::chrono::steady_clock::now());
      it->second.reply(reply);
    });
  }

  void run_until(const std::function<bool()>& done) { testing::run_until(io_, done); }

  double counter(const std::string& name, const Labels& labels = {}) const {
    const double v = testing::sample(testing::metrics_of(*stats_.pair), name, labels);
    return std::isnan(v) ? 0 : v;
  }

  boost::asio::io_context io_;
  std::shared_ptr<FakeUdPort> port_ = std::make_shared<FakeUdPort>();
  wire::PortAd remote_;
  wire::UdPeer accepted_;
  std::unique_ptr<testing::FakeResponder> responder_;
  UdProberStats stats_;
  std::shared_ptr<UdProber> prober_;
  int suspected_ = 0;
  int delivered_ = 0;  // replies handed to the prober (or dropped: no session)
};

TEST_F(UdProberTest, TheSetUpAdmitsThePortAndRepliesAreTimedByTheDeviceClock) {
  // Request k leaves at 10,000 + k ticks of a 1 GHz clock and its reply
  // arrives 400,000 ticks later, 100 us of which the responder spent: a
  // network round trip of 300 us.
  port_->khz = 1'000'000;
  port_->on_send = [this](uint32_t session, const wire::Datagram& request) {
    const uint64_t sent = 10'000 + request.seq;
    port_->sessions.at(session).sent(request.seq, sent);
    reply_later(session, request, sent + 400'000, 100'000);
  };
  start(ud_class());
  run_until([&] { return histogram(*stats_.latency).count == 3; });

  ASSERT_EQ(responder_->setups().size(), 1u);
  const auto& setup = std::get<wire::UdSetup>(responder_->setups()[0]);
  const QpParams want{Op::ud, 128, 0x48, 2, 4096};
  EXPECT_EQ(static_cast<const QpParams&>(setup), want);
  EXPECT_EQ(setup.peer, port_->address());
  EXPECT_EQ(setup.interval_ms, 3u);
  EXPECT_EQ(setup.device, "mlx5_3");
  EXPECT_EQ(setup.port, 2);
  ASSERT_EQ(port_->opened, std::vector<uint32_t>{7});
  EXPECT_EQ(port_->sessions.at(7).responder, accepted_);

  ASSERT_EQ(port_->requests.size(), 3u);
  for (uint64_t k = 1; k <= 3; ++k) {
    const Request& r = port_->requests[k - 1];
    EXPECT_EQ(r.session, 7u);
    EXPECT_EQ(r.datagram.seq, k);
    EXPECT_EQ(r.datagram.path, k % 3);  // the class's three flow labels in turn
    EXPECT_EQ(r.datagram.tclass, 0x48);
    EXPECT_EQ(r.size, 128u);
    EXPECT_EQ(r.sl, 2);
  }
  EXPECT_NEAR(histogram(*stats_.latency).sum, 3 * 300e-6, 1e-12);
  EXPECT_NEAR(histogram(*stats_.responder_delay).sum, 3 * 100e-6, 1e-12);
  EXPECT_EQ(histogram(*stats_.prober_delay).count, 3u);
  EXPECT_EQ(counter("rdma_probe_sent_total"), 3);
  EXPECT_EQ(counter("rdma_probe_timeouts_total"), 0);
  EXPECT_EQ(counter("rdma_probe_errors_total"), 0);
}

TEST_F(UdProberTest, WithoutDeviceTimestampsTheHostClockLessTheResponderDelayIsTheNetwork) {
  port_->khz = 1'000'000;
  port_->on_send = [this](uint32_t session, const wire::Datagram& request) {
    // No send timestamp; a reply timestamp alone is not used.
    reply_later(session, request, 500'000'000'000, 0);  // 500 s by the device clock
  };
  start(ud_class());
  run_until([&] { return histogram(*stats_.latency).count == 1; });
  EXPECT_GT(histogram(*stats_.latency).sum, 0);
  EXPECT_LT(histogram(*stats_.latency).sum, 100.0);      // not the 500 s the reply's ticks say
  EXPECT_EQ(histogram(*stats_.prober_delay).count, 0u);  // needs the device clock
}

TEST_F(UdProberTest, RequestsWithoutRepliesAreLostOnTheirPathAndLateRepliesAreIgnored) {
  ProbeClass cls = ud_class();
  cls.timeout = std::chrono::milliseconds(1);
  cls.flows = 2;
  start(cls);
  run_until([&] { return counter("rdma_probe_timeouts_total") >= 4; });
  // Each request is counted lost on its path (seq % 2) when a later probe
  // finds it past its timeout, oldest first.
  const auto lost = static_cast<uint64_t>(counter("rdma_probe_timeouts_total"));
  uint64_t want_path0 = 0;
  for (uint64_t seq = 1; seq <= lost; ++seq) want_path0 += seq % 2 == 0 ? 1 : 0;
  EXPECT_EQ(counter("rdma_probe_path_timeouts_total", {{"path", "0"}}),
            static_cast<double>(want_path0));
  EXPECT_EQ(counter("rdma_probe_path_timeouts_total", {{"path", "1"}}),
            static_cast<double>(lost - want_path0));
  EXPECT_GT(counter("rdma_probe_sent_total"), static_cast<double>(lost));
  EXPECT_EQ(counter("rdma_probe_up"), 0);

  // The first request's reply, now: it was counted lost already.
  reply_later(7, port_->requests[0].datagram, std::nullopt, 0);
  run_until([&] { return delivered_ == 1; });
  EXPECT_EQ(histogram(*stats_.latency).count, 0u);
  EXPECT_EQ(counter("rdma_probe_errors_total"), 0);
}

TEST_F(UdProberTest, AReplyTakenAfterTheTimeoutIsLostAndOneOfNoRequestIsIgnored) {
  const auto far = std::chrono::steady_clock::now() + std::chrono::hours(1);
  port_->on_send = [this, far](uint32_t session, const wire::Datagram& request) {
    if (request.seq == 1) {
      reply_later(session, request, std::nullopt, 0, far);  // taken an hour on: too late
      wire::Datagram unknown = request;
      unknown.seq = 999;
      reply_later(session, unknown, std::nullopt, 0);
    } else {
      reply_later(session, request, std::nullopt, 0);
    }
  };
  start(ud_class());
  run_until([&] { return histogram(*stats_.latency).count == 1; });
  EXPECT_EQ(counter("rdma_probe_path_timeouts_total", {{"path", "1"}}), 1);  // seq 1's path
  EXPECT_EQ(counter("rdma_probe_timeouts_total"), 1);
  EXPECT_EQ(counter("rdma_probe_up"), 1);  // the last probe succeeded
}

TEST_F(UdProberTest, ABusyPortSkipsOneProbeAndAFailedSendEndsTheSession) {
  port_->send_errors = {Error{ENOBUFS, "every send slot busy"},
                        Error{EIO, "the queue pair failed"}};
  port_->on_send = [this](uint32_t session, const wire::Datagram& request) {
    reply_later(session, request, std::nullopt, 0);
  };
  start(ud_class());
  run_until([&] { return histogram(*stats_.latency).count == 1; });
  // ENOBUFS: one probe skipped, the session goes on; EIO: the session
  // ends, the service hears the device may be gone, a new one is opened.
  EXPECT_EQ(counter("rdma_probe_errors_total", {{"reason", "qp_error"}}), 2);
  EXPECT_EQ(suspected_, 1);
  EXPECT_EQ(port_->opened, (std::vector<uint32_t>{7, 8}));
  EXPECT_EQ(port_->closed, std::vector<uint32_t>{7});
  EXPECT_EQ(port_->requests.size(), 3u);
  EXPECT_EQ(counter("rdma_probe_sent_total"), 1);  // only what left the port
  EXPECT_EQ(counter("rdma_probe_timeouts_total"), 0);
}

TEST_F(UdProberTest, TheResponderLeavingLosesWhatWasInFlightOnItsPaths) {
  start(ud_class());  // nothing is answered
  run_until([&] { return port_->requests.size() == 4; });
  responder_->end_sessions();
  run_until([&] { return port_->opened.size() == 2; });
  EXPECT_EQ(port_->closed, std::vector<uint32_t>{7});
  EXPECT_EQ(counter("rdma_probe_errors_total", {{"reason", "disconnected"}}), 1);
  const auto lost = counter("rdma_probe_timeouts_total");
  EXPECT_GE(lost, 4);  // probes sent before the end was seen are lost too
  double by_path = 0;
  for (const char* path : {"0", "1", "2"}) {
    by_path += counter("rdma_probe_path_timeouts_total", {{"path", path}});
  }
  EXPECT_EQ(by_path, lost);
}

TEST_F(UdProberTest, AStoppedProberLosesNothingAndClosesItsSession) {
  start(ud_class());
  run_until([&] { return port_->requests.size() == 2; });
  prober_->stop();
  EXPECT_EQ(port_->closed, std::vector<uint32_t>{7});
  EXPECT_EQ(counter("rdma_probe_timeouts_total"), 0);
  EXPECT_TRUE(port_->sessions.empty());
}

TEST_F(UdProberTest, APortWithoutAWorkingQueuePairIsASetupError) {
  port_->working_ = false;
  start(ud_class());
  run_until([&] { return counter("rdma_probe_errors_total", {{"reason", "setup"}}) >= 2; });
  EXPECT_TRUE(responder_->setups().empty());
  EXPECT_TRUE(port_->opened.empty());
}

TEST_F(UdProberTest, APortWithNoQueuePairIsASetupError) {
  port_ = nullptr;
  start(ud_class());
  run_until([&] { return counter("rdma_probe_errors_total", {{"reason", "setup"}}) >= 2; });
  EXPECT_TRUE(responder_->setups().empty());
}

TEST_F(UdProberTest, RepliesTakenWhileThisHostStalledAreInvalidNotTimed) {
  stats_.stalls = testing::stalled_throughout();
  port_->on_send = [this](uint32_t session, const wire::Datagram& request) {
    reply_later(session, request, std::nullopt, 1000);
  };
  start(ud_class());
  run_until([&] {
    return counter("rdma_probe_invalid_total", {{"reason", "local_stall"}}) +
               static_cast<double>(histogram(*stats_.latency).count) >=
           3;
  });
  EXPECT_EQ(counter("rdma_probe_invalid_total", {{"reason", "local_stall"}}), 3);
  EXPECT_EQ(histogram(*stats_.latency).count, 0u);
  EXPECT_GE(histogram(*stats_.responder_delay).count, 3u);  // the responder's evidence is kept
  EXPECT_EQ(counter("rdma_probe_timeouts_total"), 0);
  EXPECT_EQ(counter("rdma_probe_invalid_total", {{"reason", "responder_stall"}}), 0);
}

TEST_F(UdProberTest, UnansweredProbesOfAStalledHostAreInvalidNotLost) {
  stats_.stalls = testing::stalled_throughout();
  ProbeClass cls = ud_class();
  cls.timeout = std::chrono::milliseconds(1);
  start(cls);  // nothing is answered
  run_until([&] {
    return counter("rdma_probe_invalid_total", {{"reason", "local_stall"}}) +
               counter("rdma_probe_timeouts_total") >=
           3;
  });
  // A sweep may settle more than one.
  EXPECT_GE(counter("rdma_probe_invalid_total", {{"reason", "local_stall"}}), 3);
  EXPECT_EQ(counter("rdma_probe_timeouts_total"), 0);
  EXPECT_EQ(counter("rdma_probe_path_timeouts_total", {{"path", "1"}}), 0);
}

TEST_F(UdProberTest, RepliesOfAStalledResponderAreInvalidByFlagOrByItsDelay) {
  // seq 1: flagged; seq 2: a device-clock delay of 250 ms; seq 3: 199 ms,
  // below the threshold: timed; then plain replies.
  port_->on_send = [this](uint32_t session, const wire::Datagram& request) {
    if (request.seq == 1) {
      reply_later(session, request, std::nullopt, 5000, std::nullopt, wire::kResponderStalled);
    } else if (request.seq == 2) {
      reply_later(session, request, std::nullopt, 250'000'000, std::nullopt,
                  wire::kDelayDeviceClock);
    } else if (request.seq == 3) {
      reply_later(session, request, std::nullopt, 199'000'000);
    } else {
      reply_later(session, request, std::nullopt, 0);
    }
  };
  start(ud_class());
  run_until([&] { return histogram(*stats_.latency).count == 2; });
  EXPECT_EQ(counter("rdma_probe_invalid_total", {{"reason", "responder_stall"}}), 2);
  EXPECT_EQ(counter("rdma_probe_invalid_total", {{"reason", "local_stall"}}), 0);
  EXPECT_EQ(counter("rdma_probe_timeouts_total"), 0);
  EXPECT_EQ(histogram(*stats_.responder_delay).count, 4u);
  EXPECT_NEAR(histogram(*stats_.responder_delay).sum, 5e-6 + 0.25 + 0.199, 1e-9);
}

TEST_F(UdProberTest, AnOverdueReplyIsInvalidWhenItsResponderStalledAndLostWhenNot) {
  // Each request is answered when the next one is sent, 350 ms on: after
  // its 300 ms timeout, well within 4 timeouts (1.2 s). Odd ones say their
  // responder stalled.
  ProbeClass cls = ud_class();
  cls.interval = std::chrono::milliseconds(350);
  cls.timeout = std::chrono::milliseconds(300);
  cls.flows = 2;
  port_->on_send = [this](uint32_t session, const wire::Datagram& request) {
    if (request.seq == 1) return;
    wire::Datagram previous = request;
    previous.seq = request.seq - 1;
    previous.path = static_cast<uint8_t>(previous.seq % 2);
    const uint8_t flags = previous.seq % 2 == 1 ? wire::kResponderStalled : 0;
    reply_later(session, previous, std::nullopt, 0, std::nullopt, flags);
  };
  start(cls);
  run_until([&] { return delivered_ == 4; });
  // seq 1 and 3: invalid; seq 2 and 4: lost on path 0.
  EXPECT_EQ(counter("rdma_probe_invalid_total", {{"reason", "responder_stall"}}), 2);
  EXPECT_EQ(counter("rdma_probe_timeouts_total"), 2);
  EXPECT_EQ(counter("rdma_probe_path_timeouts_total", {{"path", "0"}}), 2);
  EXPECT_EQ(histogram(*stats_.latency).count, 0u);
}

}  // namespace
}  // namespace rdma_exporter::probe
