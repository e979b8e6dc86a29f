// exporter/probe/stats/stalls: when the event loop's heartbeat is late
// enough to be a stall, what interval a stall covers, and what it exports.

#include "exporter/probe/stats/stalls.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <map>

#include "tests/support/snapshot_query.hpp"

namespace rdma_exporter::probe {
namespace {

using Clock = StallWatch::Clock;
using std::chrono::milliseconds;

class StallWatchTest : public ::testing::Test {
 protected:
  // A moment well after the clock's epoch.
  const Clock::time_point t0_ = Clock::time_point{} + std::chrono::hours(1);
  StallWatch watch_;

  double metric(const char* name) const {
    return testing::sample(testing::metrics_of(watch_), name);
  }

  // rdma_probe_stall_duration_seconds: {upper bound: cumulative count},
  // its count and its sum.
  struct Durations {
    std::map<double, uint64_t> buckets;
    uint64_t count = 0;
    double sum = 0;
  };
  Durations durations() const {
    Durations d;
    const Snapshot s = testing::metrics_of(watch_);
    for (const auto& f : s.families) {
      if (f.name != "rdma_probe_stall_duration_seconds") continue;
      EXPECT_EQ(f.type, prometheus::MetricType::Histogram);
      EXPECT_EQ(f.metric.size(), 1u);
      const auto& h = f.metric.at(0).histogram;
      for (const auto& b : h.bucket) d.buckets[b.upper_bound] = b.cumulative_count;
      d.count = h.sample_count;
      d.sum = h.sample_sum;
    }
    return d;
  }
};

TEST_F(StallWatchTest, AnUnarmedWatchRecordsNothing) {
  watch_.check(t0_ + std::chrono::hours(1));
  EXPECT_FALSE(watch_.stalled_between(t0_, t0_ + std::chrono::hours(2)));
  EXPECT_EQ(metric("rdma_probe_stalls_total"), 0);
  EXPECT_EQ(metric("rdma_probe_stall_seconds_total"), 0);
}

TEST_F(StallWatchTest, AHeartbeatLessThanTheThresholdLateIsNoStall) {
  watch_.armed(t0_, t0_ + milliseconds(100));
  watch_.check(t0_ + milliseconds(100 + 199));
  EXPECT_FALSE(watch_.stalled_between(t0_, t0_ + std::chrono::hours(1)));
  EXPECT_EQ(metric("rdma_probe_stalls_total"), 0);
}

TEST_F(StallWatchTest, AStallCoversTheLastBeatToTheMomentItWasSeen) {
  // Beat at t0, due at t0 + 100 ms, seen 700 ms late.
  watch_.armed(t0_, t0_ + milliseconds(100));
  watch_.check(t0_ + milliseconds(800));
  EXPECT_TRUE(watch_.stalled_between(t0_ - milliseconds(10), t0_));  // touches its start
  EXPECT_TRUE(watch_.stalled_between(t0_ + milliseconds(800), t0_ + milliseconds(900)));
  EXPECT_TRUE(watch_.stalled_between(t0_ + milliseconds(300), t0_ + milliseconds(400)));
  EXPECT_FALSE(watch_.stalled_between(t0_ - milliseconds(10), t0_ - milliseconds(1)));
  EXPECT_FALSE(watch_.stalled_between(t0_ + milliseconds(801), t0_ + milliseconds(900)));
  EXPECT_EQ(metric("rdma_probe_stalls_total"), 1);
  EXPECT_NEAR(metric("rdma_probe_stall_seconds_total"), 0.7, 1e-9);
}

TEST_F(StallWatchTest, AStallSeenAgainIsExtendedNotCountedTwice) {
  watch_.armed(t0_, t0_ + milliseconds(100));
  watch_.check(t0_ + milliseconds(400));   // 300 ms late
  watch_.check(t0_ + milliseconds(350));   // earlier: nothing new
  watch_.check(t0_ + milliseconds(1100));  // still late: 1 s in all
  EXPECT_TRUE(watch_.stalled_between(t0_ + milliseconds(1050), t0_ + milliseconds(1060)));
  EXPECT_EQ(metric("rdma_probe_stalls_total"), 1);
  EXPECT_NEAR(metric("rdma_probe_stall_seconds_total"), 1.0, 1e-9);

  // The heartbeat runs again: the next late one is another stall.
  watch_.armed(t0_ + milliseconds(1100), t0_ + milliseconds(1200));
  watch_.check(t0_ + milliseconds(1250));  // 50 ms late: none
  EXPECT_EQ(metric("rdma_probe_stalls_total"), 1);
  watch_.check(t0_ + milliseconds(1450));  // 250 ms late
  EXPECT_EQ(metric("rdma_probe_stalls_total"), 2);
  EXPECT_NEAR(metric("rdma_probe_stall_seconds_total"), 1.25, 1e-9);
}

TEST_F(StallWatchTest, TheOldestStallsAreForgotten) {
  // kKept + 1 stalls of 300 ms, a second apart.
  for (std::size_t i = 0; i <= StallWatch::kKept; ++i) {
    const Clock::time_point beat = t0_ + std::chrono::seconds(i);
    watch_.armed(beat, beat + milliseconds(100));
    watch_.check(beat + milliseconds(400));
  }
  EXPECT_FALSE(watch_.stalled_between(t0_, t0_ + milliseconds(400)));  // the first: forgotten
  EXPECT_TRUE(watch_.stalled_between(t0_ + std::chrono::seconds(1),
                                     t0_ + std::chrono::seconds(1) + milliseconds(1)));
  EXPECT_EQ(metric("rdma_probe_stalls_total"), static_cast<double>(StallWatch::kKept + 1));
}

TEST_F(StallWatchTest, AStallCountsInTheDurationsOnceItIsOver) {
  // 1 s late, seen twice: not over until the heartbeat runs again.
  watch_.armed(t0_, t0_ + milliseconds(100));
  watch_.check(t0_ + milliseconds(600));
  watch_.check(t0_ + milliseconds(1100));
  EXPECT_EQ(durations().count, 0u);
  watch_.armed(t0_ + milliseconds(1100), t0_ + milliseconds(1200));
  Durations d = durations();
  EXPECT_EQ(d.count, 1u);
  EXPECT_NEAR(d.sum, 1.0, 1e-9);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(d.buckets, (std::map<double, uint64_t>{
                           {0.5, 0}, {1, 1}, {2, 1}, {4, 1}, {8, 1}, {16, 1}, {inf, 1}}));

  // A beat on time closes nothing more; a stall of 5.3 s lands above 4 s.
  watch_.armed(t0_ + milliseconds(1200), t0_ + milliseconds(1300));
  watch_.check(t0_ + milliseconds(6600));
  watch_.armed(t0_ + milliseconds(6600), t0_ + milliseconds(6700));
  d = durations();
  EXPECT_EQ(d.count, 2u);
  EXPECT_NEAR(d.sum, 6.3, 1e-9);
  EXPECT_EQ(d.buckets, (std::map<double, uint64_t>{
                           {0.5, 0}, {1, 1}, {2, 1}, {4, 1}, {8, 2}, {16, 2}, {inf, 2}}));
  EXPECT_EQ(metric("rdma_probe_stalls_total"), 2);
  EXPECT_NEAR(metric("rdma_probe_stall_seconds_total"), 6.3, 1e-9);
}

}  // namespace
}  // namespace rdma_exporter::probe
