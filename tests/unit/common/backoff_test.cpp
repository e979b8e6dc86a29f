// common/backoff: the delays of failures in a row, the cap, the jitter's
// range, and the reset on success.

#include "common/backoff.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace rdma_exporter {
namespace {

using std::chrono::milliseconds;

TEST(Backoff, DoublesFromInitialUpToMaxAndStartsOverAfterASuccess) {
  Backoff b({milliseconds(100), milliseconds(1000), 1.0, 1.0});
  std::vector<long long> delays;
  for (int i = 0; i < 6; ++i) delays.push_back(b.failed().count());
  EXPECT_EQ(delays, (std::vector<long long>{100, 200, 400, 800, 1000, 1000}));
  EXPECT_EQ(b.failures(), 6u);
  EXPECT_EQ(b.base(), milliseconds(1000));

  EXPECT_TRUE(b.succeeded());  // after failures
  EXPECT_EQ(b.failures(), 0u);
  EXPECT_EQ(b.base(), milliseconds(0));
  EXPECT_FALSE(b.succeeded());  // nothing failed since
  EXPECT_EQ(b.failed(), milliseconds(100));
  EXPECT_EQ(b.failed(), milliseconds(200));
}

TEST(Backoff, AMaxBelowInitialCapsTheFirstDelay) {
  Backoff b({milliseconds(1000), milliseconds(300), 1.0, 1.0});
  EXPECT_EQ(b.failed(), milliseconds(300));
  EXPECT_EQ(b.failed(), milliseconds(300));
}

TEST(Backoff, JitterStaysInItsRangeAndSpreadsPeersThatFailedTogether) {
  // 64 peers with different seeds fail together four times.
  std::vector<long long> fourth;
  for (std::uint32_t seed = 1; seed <= 64; ++seed) {
    Backoff b({milliseconds(1000), milliseconds(30000), 0.5, 1.0}, seed);
    for (int i = 1; i <= 4; ++i) {
      const long long d = b.failed().count();
      const long long base = 1000LL << (i - 1);
      EXPECT_GE(d, base / 2) << "seed " << seed << " failure " << i;
      EXPECT_LE(d, base) << "seed " << seed << " failure " << i;
      if (i == 4) fourth.push_back(d);
    }
    EXPECT_EQ(b.base(), milliseconds(8000));
  }
  // Spread over the range: some in its lower and some in its upper half.
  int low = 0;
  int high = 0;
  for (long long d : fourth) (d < 6000 ? low : high)++;
  EXPECT_GT(low, 8);
  EXPECT_GT(high, 8);
}

TEST(Backoff, TheSameSeedGivesTheSameDelays) {
  Backoff a({milliseconds(500), milliseconds(30000), 0.8, 1.2}, 7);
  Backoff b({milliseconds(500), milliseconds(30000), 0.8, 1.2}, 7);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(a.failed(), b.failed());
}

}  // namespace
}  // namespace rdma_exporter
