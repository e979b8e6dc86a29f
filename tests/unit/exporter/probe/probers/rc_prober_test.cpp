// The RC prober's state machine through a fake queue pair (no device): what
// it sets up and posts, which completion ends a probe, how long a probe
// took by the device clock, and what each kind of failure counts and does.
// The control connection is real (loopback TCP to a responder played on
// the same event loop).

#include "exporter/probe/probers/rc_prober.hpp"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cmath>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/fake_responder.hpp"
#include "tests/support/run_until.hpp"
#include "tests/support/snapshot_query.hpp"
#include "tests/support/stalls.hpp"

namespace rdma_exporter::probe {
namespace {

class FakeQp;

// The fake device: what its queue pairs were made with and did, and how
// they answer posts.
struct FakeDevice {
  std::vector<QpParams> params;
  std::vector<int> gid_indexes;
  std::vector<uint32_t> recv_depths;
  std::size_t made = 0;
  std::size_t destroyed = 0;
  // The next queue pairs that cannot be made, and with what.
  std::deque<Error> make_errors;
  std::vector<wire::Peer> connected;
  std::vector<std::pair<uint64_t, wire::Peer>> posts;
  std::vector<uint64_t> recvs;
  std::optional<uint64_t> clock;
  uint64_t khz = 0;
  // At each post of the queue pair made `made`-th: what answers it.
  std::function<void(FakeQp& qp, std::size_t made, uint64_t wr_id)> on_post;
};

class FakeQp final : public RcQueuePair {
 public:
  FakeQp(FakeDevice& device, std::size_t number, uint32_t recv_depth)
      : device_(device),
        number_(number),
        recv_depth_(recv_depth),
        fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~FakeQp() override {
    ++device_.destroyed;
    *alive_ = false;
    ::close(fd_);
  }
  FakeQp(const FakeQp&) = delete;
  FakeQp& operator=(const FakeQp&) = delete;

  wire::Peer local() const override {
    wire::Peer p;
    p.qpn = 0x100 + static_cast<uint32_t>(number_);
    p.psn = 0x2200 + static_cast<uint32_t>(number_);
    p.lid = 0x33;
    p.gid.fill(0x44);
    return p;
  }
  Status connect(const wire::Peer& remote) override {
    device_.connected.push_back(remote);
    for (uint32_t i = 0; i < recv_depth_; ++i) {
      if (Status s = post_recv(kRecvTag | i); !s) return s;
    }
    return ok_status();
  }
  Status post(uint64_t wr_id, const wire::Peer& remote) override {
    device_.posts.emplace_back(wr_id, remote);
    if (device_.on_post) device_.on_post(*this, number_, wr_id);
    return ok_status();
  }
  Status post_recv(uint64_t wr_id) override {
    device_.recvs.push_back(wr_id);
    return ok_status();
  }
  Result<std::size_t> poll(std::span<Completion> out) override {
    std::size_t n = 0;
    while (n < out.size() && !queue_.empty()) {
      out[n++] = queue_.front();
      queue_.pop_front();
    }
    return n;
  }
  Status arm() override {
    armed_ = true;
    return ok_status();
  }
  int channel_fd() const override { return fd_; }
  void consume_events() override {
    uint64_t v = 0;
    while (::read(fd_, &v, sizeof v) == static_cast<ssize_t>(sizeof v)) {
    }
  }
  std::optional<uint64_t> clock_now() const override { return device_.clock; }
  uint64_t clock_khz() const override { return device_.khz; }

  // A completion enters the queue; an armed queue raises an event.
  void complete(Completion c) {
    queue_.push_back(c);
    if (armed_) {
      armed_ = false;
      const uint64_t one = 1;
      EXPECT_EQ(::write(fd_, &one, sizeof one), static_cast<ssize_t>(sizeof one));
    }
  }
  // A completion that enters the queue from the event loop later and raises
  // no event, as when the loop was stalled when it came.
  void complete_unseen_later(boost::asio::io_context& io, Completion c) {
    boost::asio::post(io, [this, alive = alive_, c] {
      if (*alive) queue_.push_back(c);
    });
  }
  // The same, from the event loop later, unless the queue pair is gone by then.
  void complete_later(boost::asio::io_context& io, Completion c) {
    boost::asio::post(io, [this, alive = alive_, c] {
      if (*alive) complete(c);
    });
  }

 private:
  FakeDevice& device_;
  const std::size_t number_;
  const uint32_t recv_depth_;
  const int fd_;
  std::deque<Completion> queue_;
  bool armed_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

RcQueuePairMaker fake_queue_pairs(FakeDevice& device) {
  return [&device](const QpParams& params, int gid_index,
                   uint32_t recv_depth) -> Result<std::unique_ptr<RcQueuePair>> {
    device.params.push_back(params);
    device.gid_indexes.push_back(gid_index);
    device.recv_depths.push_back(recv_depth);
    if (!device.make_errors.empty()) {
      Error e = device.make_errors.front();
      device.make_errors.pop_front();
      return e;
    }
    ++device.made;
    return std::unique_ptr<RcQueuePair>(new FakeQp(device, device.made, recv_depth));
  };
}

Completion done(uint64_t wr_id, std::optional<uint64_t> ticks = std::nullopt,
                ibv_wc_status status = IBV_WC_SUCCESS) {
  return Completion{wr_id, status, IBV_WC_RDMA_WRITE, ticks};
}

testing::HistogramSample latency(const SeriesStats& stats) {
  for (const auto& f : testing::metrics_of(stats).families) {
    if (f.name == "rdma_probe_latency_seconds" && f.metric.size() == 1) {
      return {f.metric[0].histogram.sample_count, f.metric[0].histogram.sample_sum};
    }
  }
  return {};
}

class RcProberTest : public ::testing::Test {
 protected:
  RcProberTest() {
    remote_.device = "mlx5_3";
    remote_.port = 2;
    remote_.rail = "rail1";
    accepted_.qpn = 0x2345;
    accepted_.psn = 0x6789;
    accepted_.lid = 0x0a0b;
    accepted_.gid.fill(0x5c);
    accepted_.rkey = 0x7777;
    accepted_.addr = 0x1234'5678'9abcULL;
  }

  ~RcProberTest() override {
    if (prober_) prober_->stop();
    if (responder_) responder_->stop();
    io_.restart();
    io_.run_for(std::chrono::seconds(5));
  }

  static ProbeClass write_class() {
    ProbeClass c;
    c.name = "w";
    c.op = Op::write;
    c.size = 256;
    c.tclass = 0x68;
    c.sl = 3;
    c.mtu = 2048;
    c.gid_index = 5;
    c.interval = std::chrono::milliseconds(1);
    c.timeout = std::chrono::seconds(30);
    c.busy_poll = std::chrono::microseconds(0);
    return c;
  }

  void start(const ProbeClass& cls) {
    responder_ = std::make_unique<testing::FakeResponder>(
        io_, remote_, [this](const wire::Message&) -> std::optional<wire::Message> {
          return wire::Accept{accepted_, {}};
        });
    ProberSettings settings;
    settings.backoff_initial = std::chrono::milliseconds(1);
    settings.backoff_max = std::chrono::milliseconds(2);
    settings.device_suspect = [this] { ++suspected_; };
    settings.stalls = stalls_;
    prober_ = std::make_shared<Prober>(io_, "fake0/1", fake_queue_pairs(device_),
                                       responder_->address(), remote_, cls, settings, stats_);
    prober_->start();
  }

  void run_until(const std::function<bool()>& done) { testing::run_until(io_, done); }

  double counter(const std::string& name, const Labels& labels = {}) const {
    const double v = testing::sample(testing::metrics_of(*stats_), name, labels);
    return std::isnan(v) ? 0 : v;
  }

  FakeDevice device_;  // outlives the loop, whose handlers may hold queue pairs
  boost::asio::io_context io_;
  wire::PortAd remote_;
  wire::Peer accepted_;
  std::unique_ptr<testing::FakeResponder> responder_;
  std::shared_ptr<SeriesStats> stats_ = std::make_shared<SeriesStats>(Labels{{"target", "t"}});
  std::shared_ptr<Prober> prober_;
  std::shared_ptr<StallWatch> stalls_;  // none: the loop never stalls
  int suspected_ = 0;
};

TEST_F(RcProberTest, AWriteIsSetUpPostedToTheAcceptedPeerAndTimedByTheDeviceClock) {
  // A 500 MHz device clock at 1,000,000 ticks when each probe is posted;
  // probe k completes 125,000 x k ticks later: 0.25 ms x k.
  device_.clock = 1'000'000;
  device_.khz = 500'000;
  device_.on_post = [](FakeQp& qp, std::size_t, uint64_t wr_id) {
    qp.complete(done(wr_id, 1'000'000 + 125'000 * wr_id));
  };
  start(write_class());
  run_until([&] { return latency(*stats_).count == 3; });

  ASSERT_EQ(device_.made, 1u);
  const QpParams want{Op::write, 256, 0x68, 3, 2048};
  EXPECT_EQ(device_.params[0], want);
  EXPECT_EQ(device_.gid_indexes[0], 5);
  EXPECT_EQ(device_.recv_depths[0], 0u);  // a write needs no receives
  ASSERT_EQ(responder_->setups().size(), 1u);
  const auto& setup = std::get<wire::Setup>(responder_->setups()[0]);
  EXPECT_EQ(static_cast<const QpParams&>(setup), want);
  EXPECT_EQ(setup.peer.qpn, 0x101u);
  EXPECT_EQ(setup.peer.psn, 0x2201u);
  EXPECT_EQ(setup.device, "mlx5_3");
  EXPECT_EQ(setup.port, 2);
  ASSERT_EQ(device_.connected.size(), 1u);
  EXPECT_EQ(device_.connected[0], accepted_);
  ASSERT_EQ(device_.posts.size(), 3u);
  for (uint64_t k = 1; k <= 3; ++k) {
    EXPECT_EQ(device_.posts[k - 1].first, k);
    EXPECT_EQ(device_.posts[k - 1].second, accepted_);  // its rkey and address
  }
  EXPECT_EQ(counter("rdma_probe_sent_total"), 3);
  EXPECT_EQ(counter("rdma_probe_timeouts_total"), 0);
  EXPECT_EQ(counter("rdma_probe_up"), 1);
  EXPECT_NEAR(latency(*stats_).sum, 0.00025 + 0.0005 + 0.00075, 1e-12);
}

TEST_F(RcProberTest, ASendEndsAtTheEchoAndPostsItsReceiveAgain) {
  // The send completes 100 ticks after the post, the echo 300 ticks after,
  // on the event channel: the probe took the echo's 300 ticks at 1 GHz.
  device_.clock = 5'000;
  device_.khz = 1'000'000;
  device_.on_post = [this](FakeQp& qp, std::size_t, uint64_t wr_id) {
    qp.complete(done(wr_id, 5'100));
    qp.complete_later(io_, done(RcQueuePair::kRecvTag | (wr_id % 2), 5'300));
  };
  ProbeClass cls = write_class();
  cls.op = Op::send;
  start(cls);
  run_until([&] { return latency(*stats_).count == 2; });

  EXPECT_EQ(device_.recv_depths[0], 2u);
  // Two receives posted at connect, then each one again once it completed.
  const std::vector<uint64_t> want{RcQueuePair::kRecvTag | 0, RcQueuePair::kRecvTag | 1,
                                   RcQueuePair::kRecvTag | 1, RcQueuePair::kRecvTag | 0};
  EXPECT_EQ(device_.recvs, want);
  EXPECT_NEAR(latency(*stats_).sum, 2 * 300e-9, 1e-15);
}

TEST_F(RcProberTest, ACompletionOfAnEarlierProbeDoesNotEndTheCurrentOne) {
  device_.clock = 0;
  device_.khz = 1'000'000;  // 1 tick = 1 ns
  device_.on_post = [this](FakeQp& qp, std::size_t, uint64_t wr_id) {
    if (wr_id == 2) {
      qp.complete(done(1, 900));  // probe 1's, again: not probe 2's end
      qp.complete_later(io_, done(2, 40));
    } else {
      qp.complete(done(wr_id, 20));
    }
  };
  start(write_class());
  run_until([&] { return latency(*stats_).count == 2; });
  EXPECT_NEAR(latency(*stats_).sum, 60e-9, 1e-15);
}

TEST_F(RcProberTest, WithoutDeviceTimestampsTheHostClockTimesTheProbe) {
  device_.khz = 1;  // a clock rate, but no clock: host time
  device_.on_post = [](FakeQp& qp, std::size_t, uint64_t wr_id) {
    qp.complete(done(wr_id, 1'000'000'000));  // 10^6 s by that rate: not used
  };
  start(write_class());
  run_until([&] { return latency(*stats_).count == 1; });
  EXPECT_GT(latency(*stats_).sum, 0);
  EXPECT_LT(latency(*stats_).sum, 1000.0);
}

// What a failed completion counts as, and that the session is set up again.
struct FailedCompletion {
  const char* name;  // the test's name: stable from run to run
  ibv_wc_status status;
  const char* reason;  // nullptr: counted as a timeout
};

// What gtest prints of a parameter: its name, not its bytes.
void PrintTo(const FailedCompletion& f, std::ostream* out) {
  *out << f.name;
}

class RcProberFailedCompletion : public RcProberTest,
                                 public ::testing::WithParamInterface<FailedCompletion> {};

TEST_P(RcProberFailedCompletion, CountsItsKindAndSetsTheSessionUpAgain) {
  const FailedCompletion failure = GetParam();
  device_.on_post = [failure](FakeQp& qp, std::size_t made, uint64_t wr_id) {
    qp.complete(done(wr_id, std::nullopt, made == 1 ? failure.status : IBV_WC_SUCCESS));
  };
  start(write_class());
  run_until([&] { return latency(*stats_).count == 1; });

  EXPECT_EQ(device_.made, 2u);
  EXPECT_EQ(device_.destroyed, 1u);
  EXPECT_EQ(responder_->connections(), 2u);
  EXPECT_EQ(responder_->setups().size(), 2u);
  EXPECT_EQ(counter("rdma_probe_sent_total"), 2);
  if (failure.reason == nullptr) {
    EXPECT_EQ(counter("rdma_probe_timeouts_total"), 1);
    EXPECT_EQ(counter("rdma_probe_errors_total"), 0);
  } else {
    EXPECT_EQ(counter("rdma_probe_timeouts_total"), 0);
    EXPECT_EQ(counter("rdma_probe_errors_total", {{"reason", failure.reason}}), 1);
  }
  EXPECT_EQ(counter("rdma_probe_up"), 1);  // up again after the new session's probe
}

INSTANTIATE_TEST_SUITE_P(
    Statuses, RcProberFailedCompletion,
    ::testing::Values(
        FailedCompletion{"RetryExceeded", IBV_WC_RETRY_EXC_ERR, nullptr},
        FailedCompletion{"RnrRetryExceeded", IBV_WC_RNR_RETRY_EXC_ERR, nullptr},
        FailedCompletion{"RemoteAccess", IBV_WC_REM_ACCESS_ERR, "remote_error"},
        FailedCompletion{"RemoteInvalidRequest", IBV_WC_REM_INV_REQ_ERR, "remote_error"},
        FailedCompletion{"RemoteOperation", IBV_WC_REM_OP_ERR, "remote_error"},
        FailedCompletion{"RemoteAbort", IBV_WC_REM_ABORT_ERR, "remote_error"},
        FailedCompletion{"RemoteInvalidReadRequest", IBV_WC_REM_INV_RD_REQ_ERR, "remote_error"},
        FailedCompletion{"LocalProtection", IBV_WC_LOC_PROT_ERR, "qp_error"},
        FailedCompletion{"Flushed", IBV_WC_WR_FLUSH_ERR, "qp_error"}),
    [](const ::testing::TestParamInfo<FailedCompletion>& param) { return param.param.name; });

TEST_F(RcProberTest, NoCompletionWithinTheTimeoutIsATimeoutAndANewSession) {
  device_.on_post = [](FakeQp& qp, std::size_t made, uint64_t wr_id) {
    if (made > 1) qp.complete(done(wr_id));  // the first queue pair never completes
  };
  ProbeClass cls = write_class();
  cls.timeout = std::chrono::milliseconds(5);
  start(cls);
  run_until([&] { return latency(*stats_).count == 1; });
  EXPECT_EQ(counter("rdma_probe_timeouts_total"), 1);
  EXPECT_EQ(device_.made, 2u);
  EXPECT_EQ(device_.destroyed, 1u);
}

TEST_F(RcProberTest, AProbeThisHostStalledInIsInvalidNotTimed) {
  stalls_ = testing::stalled_throughout();
  device_.on_post = [](FakeQp& qp, std::size_t, uint64_t wr_id) { qp.complete(done(wr_id)); };
  start(write_class());
  run_until([&] {
    return counter("rdma_probe_invalid_total", {{"reason", "local_stall"}}) +
               static_cast<double>(latency(*stats_).count) >=
           3;
  });
  EXPECT_EQ(counter("rdma_probe_invalid_total", {{"reason", "local_stall"}}), 3);
  EXPECT_EQ(latency(*stats_).count, 0u);
  EXPECT_EQ(counter("rdma_probe_timeouts_total"), 0);
}

TEST_F(RcProberTest, ATimeoutPassedInAStallLooksInTheQueueAndWaitsOneMore) {
  // The first probe's completion comes without an event, as after a stall:
  // only the look at the deadline finds it. The second probe's never
  // comes: after its second timeout it times out.
  stalls_ = testing::stalled_throughout();
  device_.on_post = [this](FakeQp& qp, std::size_t made, uint64_t wr_id) {
    if (made == 1 && wr_id == 1) qp.complete_unseen_later(io_, done(wr_id));
    if (made > 1) qp.complete(done(wr_id));
  };
  ProbeClass cls = write_class();
  cls.timeout = std::chrono::milliseconds(5);
  start(cls);
  run_until([&] { return counter("rdma_probe_timeouts_total") == 1; });
  EXPECT_EQ(counter("rdma_probe_invalid_total", {{"reason", "local_stall"}}), 1);
  EXPECT_EQ(device_.made, 1u);  // the session was not set up again for the first
  run_until([&] { return device_.made == 2; });
}

TEST_F(RcProberTest, AQueuePairThatCannotBeMadeIsASetupErrorAndTellsOfAGoneDevice) {
  device_.make_errors = {Error{ENODEV, "fake0: gone"}, Error{ENOMEM, "fake0: no memory"}};
  device_.on_post = [](FakeQp& qp, std::size_t, uint64_t wr_id) { qp.complete(done(wr_id)); };
  start(write_class());
  run_until([&] { return latency(*stats_).count == 1; });
  EXPECT_EQ(counter("rdma_probe_errors_total", {{"reason", "setup"}}), 2);
  EXPECT_EQ(suspected_, 1);  // ENODEV says the device may be gone; ENOMEM does not
  EXPECT_EQ(device_.params.size(), 3u);
  EXPECT_EQ(device_.made, 1u);
  // No set-up was sent for the sessions that had no queue pair.
  EXPECT_EQ(responder_->setups().size(), 1u);
}

TEST_F(RcProberTest, TheResponderLeavingEndsTheSessionAndItIsSetUpAgain) {
  device_.on_post = [](FakeQp& qp, std::size_t, uint64_t wr_id) { qp.complete(done(wr_id)); };
  ProbeClass cls = write_class();
  cls.interval = std::chrono::milliseconds(2);
  start(cls);
  run_until([&] { return latency(*stats_).count == 2; });
  responder_->end_sessions();
  run_until([&] { return device_.made == 2 && latency(*stats_).count >= 3; });
  EXPECT_EQ(counter("rdma_probe_errors_total", {{"reason", "disconnected"}}), 1);
  EXPECT_EQ(device_.destroyed, 1u);
  EXPECT_EQ(responder_->connections(), 2u);
}

}  // namespace
}  // namespace rdma_exporter::probe
