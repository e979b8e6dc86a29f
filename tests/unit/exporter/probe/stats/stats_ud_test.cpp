// The UD probe's series: the bounded shape of a pair, the shared
// histograms, a port's drops and answers, the pinglist report.

#include <gtest/gtest.h>

#include <cmath>

#include "exporter/probe/stats/stats.hpp"
#include "tests/support/snapshot_query.hpp"

namespace rdma_exporter::probe {
namespace {

using rdma_exporter::testing::metrics_of;
using rdma_exporter::testing::sample;
using rdma_exporter::testing::series_count;

// In the bounded shape a pair has its counters and last success only; a
// lost probe counts as a timeout, and by path once its path lost one.
TEST(ProbeUdStats, BoundedPairSeriesAndLostByPath) {
  ProbeStats stats;
  const Labels pair = {{"target", "t:1"}, {"device", "rxe0"}, {"op", "ud"}};
  auto s = stats.series(pair, SeriesShape{false, false});
  s->sent();
  s->sent();
  s->sent();
  s->success(20e-6, 1700000000.0);
  s->lost(2);
  s->lost(2);
  const Snapshot snap = metrics_of(stats);
  EXPECT_EQ(sample(snap, "rdma_probe_sent_total", pair), 3.0);
  EXPECT_EQ(sample(snap, "rdma_probe_timeouts_total", pair), 2.0);
  EXPECT_EQ(sample(snap, "rdma_probe_last_success_timestamp_seconds", pair), 1700000000.0);
  EXPECT_EQ(sample(snap, "rdma_probe_path_timeouts_total", {{"path", "2"}}), 2.0);
  EXPECT_EQ(series_count(snap, "rdma_probe_path_timeouts_total"), 1u);
  EXPECT_EQ(series_count(snap, "rdma_probe_latency_seconds"), 0u);
  EXPECT_EQ(series_count(snap, "rdma_probe_up"), 0u);
  // The per-target shape has the histogram and up as well.
  ProbeStats full;
  auto f = full.series(pair, SeriesShape{true, true});
  f->success(20e-6, 1.0);
  const Snapshot fs = metrics_of(full);
  EXPECT_EQ(series_count(fs, "rdma_probe_latency_seconds"), 1u);
  EXPECT_EQ(sample(fs, "rdma_probe_up", pair), 1.0);
}

// The pair's window shows only while it holds a loss or a failure, in both
// shapes; the sparse shape (probe.pair_series: failing) has nothing else.
TEST(ProbeUdStats, PairWindowSeriesOnlyWhileFailing) {
  const ProbeClock::time_point t0 = ProbeClock::time_point{} + std::chrono::hours(1000);
  const Labels pair = {{"target", "t:1"}, {"device", "rxe0"}, {"op", "ud"}};
  ProbeStats stats;
  auto s = stats.series(pair, SeriesShape{false, false, false});
  for (int i = 0; i < 9; ++i) s->sent(t0 + std::chrono::seconds(i));
  for (int i = 0; i < 5; ++i) s->success(20e-6, 1700000000.0, t0 + std::chrono::seconds(i));
  const auto at = [&](std::chrono::seconds when) { return metrics_of(stats, t0 + when); };
  Snapshot healthy = at(std::chrono::seconds(9));
  EXPECT_EQ(series_count(healthy, "rdma_probe_pair_window_sent"), 0u);
  EXPECT_EQ(series_count(healthy, "rdma_probe_sent_total"), 0u);
  EXPECT_EQ(series_count(healthy, "rdma_probe_last_success_timestamp_seconds"), 0u);
  s->lost(1, t0 + std::chrono::seconds(10));
  s->lost(3, t0 + std::chrono::seconds(11));
  s->error("unreachable", t0 + std::chrono::seconds(12));
  Snapshot failing = at(std::chrono::seconds(12));
  EXPECT_EQ(sample(failing, "rdma_probe_pair_window_sent", pair), 9.0);
  EXPECT_EQ(sample(failing, "rdma_probe_pair_window_answered", pair), 5.0);
  EXPECT_EQ(sample(failing, "rdma_probe_pair_window_lost", pair), 2.0);
  EXPECT_EQ(sample(failing, "rdma_probe_pair_window_path_lost", {{"path", "1"}}), 1.0);
  EXPECT_EQ(sample(failing, "rdma_probe_pair_window_path_lost", {{"path", "3"}}), 1.0);
  EXPECT_EQ(series_count(failing, "rdma_probe_pair_window_path_lost"), 2u);
  EXPECT_EQ(sample(failing, "rdma_probe_pair_window_failed", pair), 1.0);
  EXPECT_EQ(series_count(failing, "rdma_probe_timeouts_total"), 0u);
  EXPECT_EQ(series_count(failing, "rdma_probe_errors_total"), 0u);
  EXPECT_EQ(series_count(failing, "rdma_probe_path_timeouts_total"), 0u);
  // Two minutes after the step of the last failure (10 to 20 s) began, the
  // pair is quiet again.
  EXPECT_EQ(series_count(at(std::chrono::seconds(129)), "rdma_probe_pair_window_failed"), 1u);
  EXPECT_EQ(series_count(at(std::chrono::seconds(130)), "rdma_probe_pair_window_sent"), 0u);

  // The counters' shape has its window beside its counters.
  ProbeStats all;
  auto c = all.series(pair, SeriesShape{false, false, true});
  c->sent(t0);
  c->sent(t0 + std::chrono::seconds(1));
  c->timeout(t0 + std::chrono::seconds(2));
  const Snapshot both = metrics_of(all, t0 + std::chrono::seconds(3));
  EXPECT_EQ(sample(both, "rdma_probe_sent_total", pair), 2.0);
  EXPECT_EQ(sample(both, "rdma_probe_timeouts_total", pair), 1.0);
  EXPECT_EQ(sample(both, "rdma_probe_pair_window_sent", pair), 2.0);
  EXPECT_EQ(sample(both, "rdma_probe_pair_window_lost", pair), 1.0);
  EXPECT_EQ(sample(both, "rdma_probe_pair_window_failed", pair), 0.0);
}

// A pair that leaves the plan: with counters it goes at once; in the sparse
// shape it stays while its window holds a failure, then goes.
TEST(ProbeUdStats, OnlySparsePairsThatFailLingerAfterTheyLeaveThePlan) {
  const ProbeClock::time_point t0 = ProbeClock::time_point{} + std::chrono::hours(1000);
  const Labels failing = {{"target", "t:1"}, {"device", "rxe0"}};
  const Labels healthy = {{"target", "t:2"}, {"device", "rxe0"}};
  const Labels counted = {{"target", "t:3"}, {"device", "rxe0"}};
  ProbeStats stats;
  auto f = stats.series(failing, SeriesShape{false, false, false});
  auto h = stats.series(healthy, SeriesShape{false, false, false});
  auto c = stats.series(counted, SeriesShape{false, false, true});
  f->sent(t0);
  f->lost(0, t0);
  h->sent(t0);
  c->sent(t0);
  c->lost(0, t0);
  const std::weak_ptr<SeriesStats> gone_h = h;
  const std::weak_ptr<SeriesStats> gone_c = c;
  h.reset();
  c.reset();
  stats.retain({}, t0 + std::chrono::seconds(60));
  EXPECT_TRUE(gone_h.expired());
  EXPECT_TRUE(gone_c.expired());
  const Snapshot snap = metrics_of(stats, t0 + std::chrono::seconds(60));
  EXPECT_EQ(sample(snap, "rdma_probe_pair_window_lost", failing), 1.0);
  EXPECT_EQ(series_count(snap, "rdma_probe_pair_window_lost"), 1u);
  // Back in the plan, it is the same series.
  EXPECT_EQ(stats.series(failing, SeriesShape{false, false, false}), f);
  const std::weak_ptr<SeriesStats> gone_f = f;
  f.reset();
  stats.retain({}, t0 + std::chrono::seconds(120));
  EXPECT_TRUE(gone_f.expired());
}

// Once one class of a pair fails, every class probing that pair shows its
// window (a pair is down when none of them answered), and they linger
// together; another pair of the same port shows nothing.
TEST(ProbeUdStats, EveryClassOfAFailingPairShowsItsWindow) {
  const ProbeClock::time_point t0 = ProbeClock::time_point{} + std::chrono::hours(1000);
  const Labels pair_a = {{"target", "t:1"}, {"device", "rxe0"}, {"op", "ud"}, {"tclass", "0"}};
  const Labels pair_b = {{"target", "t:1"}, {"device", "rxe0"}, {"op", "ud"}, {"tclass", "106"}};
  const Labels other = {{"target", "t:2"}, {"device", "rxe0"}, {"op", "ud"}, {"tclass", "0"}};
  ProbeStats stats;
  auto a = stats.series(pair_a, SeriesShape{false, false, false});
  auto b = stats.series(pair_b, SeriesShape{false, false, false});
  auto o = stats.series(other, SeriesShape{false, false, false});
  for (int i = 0; i < 6; ++i) {
    const ProbeClock::time_point at = t0 + std::chrono::seconds(i);
    a->sent(at);
    b->sent(at);
    o->sent(at);
    a->success(20e-6, 1.0, at);
    o->success(20e-6, 1.0, at);
  }
  for (int i = 0; i < 4; ++i) b->lost(0, t0 + std::chrono::seconds(i));
  b->error("qp_error", t0 + std::chrono::seconds(5));
  const Snapshot snap = metrics_of(stats, t0 + std::chrono::seconds(7));
  EXPECT_EQ(sample(snap, "rdma_probe_pair_window_answered", pair_a), 6.0);
  EXPECT_EQ(sample(snap, "rdma_probe_pair_window_lost", pair_a), 0.0);
  EXPECT_EQ(sample(snap, "rdma_probe_pair_window_sent", pair_b), 6.0);
  EXPECT_EQ(sample(snap, "rdma_probe_pair_window_answered", pair_b), 0.0);
  EXPECT_EQ(sample(snap, "rdma_probe_pair_window_lost", pair_b), 4.0);
  EXPECT_EQ(sample(snap, "rdma_probe_pair_window_failed", pair_b), 1.0);
  EXPECT_EQ(series_count(snap, "rdma_probe_pair_window_sent"), 2u);

  // The pair leaves the plan: both classes stay while one of them fails.
  const std::weak_ptr<SeriesStats> gone_a = a;
  const std::weak_ptr<SeriesStats> gone_o = o;
  a.reset();
  b.reset();
  o.reset();
  stats.retain({}, t0 + std::chrono::seconds(60));
  EXPECT_FALSE(gone_a.expired());
  EXPECT_TRUE(gone_o.expired());
  stats.retain({}, t0 + std::chrono::seconds(120));
  EXPECT_TRUE(gone_a.expired());
}

TEST(ProbeUdStats, SharedHistogramsAreKeptWhileWanted) {
  ProbeStats stats;
  const Labels g1 = {{"device", "rxe0"}, {"scope", "group"}};
  const Labels g2 = {{"device", "rxe0"}, {"scope", "remote"}};
  auto a = stats.histogram("rdma_probe_group_latency_seconds", "h", g1);
  auto again = stats.histogram("rdma_probe_group_latency_seconds", "h", g1);
  EXPECT_EQ(a, again);
  auto b = stats.histogram("rdma_probe_group_latency_seconds", "h", g2);
  a->observe(3e-6);   // bucket le=5e-06
  a->observe(30e-6);  // bucket le=5e-05
  b->observe(1.0);
  Snapshot snap = metrics_of(stats);
  ASSERT_EQ(series_count(snap, "rdma_probe_group_latency_seconds"), 2u);
  for (const auto& f : snap.families) {
    if (f.name != "rdma_probe_group_latency_seconds") continue;
    for (const auto& m : f.metric) {
      if (m.label.back().value != "group") continue;
      EXPECT_EQ(m.histogram.sample_count, 2u);
      EXPECT_NEAR(m.histogram.sample_sum, 33e-6, 1e-12);
      // Cumulative: 0 up to 2.5e-6, 1 at 5e-6, 2 from 5e-5.
      EXPECT_EQ(m.histogram.bucket[1].cumulative_count, 0u);
      EXPECT_EQ(m.histogram.bucket[2].cumulative_count, 1u);
      EXPECT_EQ(m.histogram.bucket[5].cumulative_count, 2u);
    }
  }
  stats.retain_histograms({b});
  snap = metrics_of(stats);
  EXPECT_EQ(series_count(snap, "rdma_probe_group_latency_seconds"), 1u);
}

TEST(ProbeUdStats, PortCountsDropsByReasonAnswersAndPeers) {
  ProbeStats stats;
  const Labels port = {{"device", "rxe0"}, {"port", "1"}};
  auto u = stats.ud_port(port);
  u->dropped(ud_drop::not_admitted);
  u->dropped(ud_drop::not_admitted);
  u->dropped(ud_drop::malformed);
  u->answered();
  u->set_peers(7, 2);
  Snapshot snap = metrics_of(stats);
  EXPECT_EQ(sample(snap, "rdma_probe_ud_dropped_total", {{"reason", "not_admitted"}}), 2.0);
  EXPECT_EQ(sample(snap, "rdma_probe_ud_dropped_total", {{"reason", "malformed"}}), 1.0);
  EXPECT_EQ(sample(snap, "rdma_probe_ud_answered_total", port), 1.0);
  EXPECT_EQ(sample(snap, "rdma_probe_ud_peers", {{"device", "rxe0"}, {"scope", "group"}}), 7.0);
  EXPECT_EQ(sample(snap, "rdma_probe_ud_peers", {{"device", "rxe0"}, {"scope", "remote"}}), 2.0);
  stats.retain_ud_ports({});
  snap = metrics_of(stats);
  EXPECT_EQ(series_count(snap, "rdma_probe_ud_peers"), 0u);
}

// The requests a port received and those its probers' sequence numbers say
// were sent, by the probers' scope.
TEST(ProbeUdStats, PortCountsRequestsByTheProbersScope) {
  ProbeStats stats;
  auto u = stats.ud_port({{"device", "rxe0"}, {"port", "1"}});
  u->request(ProberScope::group, 5);
  u->request(ProberScope::group, 4);
  u->request(ProberScope::group, 1);
  u->request(ProberScope::remote, 9);
  const Snapshot snap = metrics_of(stats);
  const Labels group = {{"device", "rxe0"}, {"scope", "group"}};
  const Labels remote = {{"device", "rxe0"}, {"scope", "remote"}};
  EXPECT_EQ(sample(snap, "rdma_probe_ud_requests_expected_total", group), 10.0);
  EXPECT_EQ(sample(snap, "rdma_probe_ud_requests_received_total", group), 3.0);
  EXPECT_EQ(sample(snap, "rdma_probe_ud_requests_expected_total", remote), 9.0);
  EXPECT_EQ(sample(snap, "rdma_probe_ud_requests_received_total", remote), 1.0);
  // Both scopes are always there: a port no remote prober reaches says 0.
  EXPECT_EQ(sample(snap, "rdma_probe_ud_peers", remote), 0.0);
}

TEST(ProbeUdStats, PinglistReport) {
  ProbeStats stats;
  EXPECT_EQ(series_count(metrics_of(stats), "rdma_probe_pinglist_hosts"), 0u);
  stats.set_pinglist(PinglistReport{true, "rack7", "h7.example:10911", 29000000, 31, 4, 10000});
  const Snapshot snap = metrics_of(stats);
  EXPECT_EQ(sample(snap, "rdma_probe_pinglist_hosts", {{"scope", "group"}}), 31.0);
  EXPECT_EQ(sample(snap, "rdma_probe_pinglist_hosts", {{"scope", "remote"}}), 4.0);
  EXPECT_EQ(sample(snap, "rdma_probe_pinglist_fleet_hosts"), 10000.0);
  EXPECT_EQ(sample(snap, "rdma_probe_pinglist_epoch"), 29000000.0);
  EXPECT_EQ(sample(snap, "rdma_probe_pinglist_info",
                   {{"group", "rack7"}, {"address", "h7.example:10911"}, {"listed", "true"}}),
            1.0);
}

}  // namespace
}  // namespace rdma_exporter::probe
