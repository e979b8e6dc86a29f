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
  u->set_peers(7);
  Snapshot snap = metrics_of(stats);
  EXPECT_EQ(sample(snap, "rdma_probe_ud_dropped_total", {{"reason", "not_admitted"}}), 2.0);
  EXPECT_EQ(sample(snap, "rdma_probe_ud_dropped_total", {{"reason", "malformed"}}), 1.0);
  EXPECT_EQ(sample(snap, "rdma_probe_ud_answered_total", port), 1.0);
  EXPECT_EQ(sample(snap, "rdma_probe_ud_peers", port), 7.0);
  stats.retain_ud_ports({});
  snap = metrics_of(stats);
  EXPECT_EQ(series_count(snap, "rdma_probe_ud_peers"), 0u);
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
