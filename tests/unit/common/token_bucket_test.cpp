// The token bucket every rate limit uses, on the caller's clock.

#include "common/token_bucket.hpp"

#include <gtest/gtest.h>

namespace rdma_exporter {
namespace {

using Clock = TokenBucket::Clock;
using namespace std::chrono_literals;

const Clock::time_point t0 = Clock::time_point{} + 1h;

TEST(TokenBucket, StartsFullGainsOnePerIntervalAndHoldsAtMostItsCapacity) {
  TokenBucket b(3, 100ms, t0);
  EXPECT_TRUE(b.full(t0));
  EXPECT_TRUE(b.take(t0));
  EXPECT_TRUE(b.take(t0));
  EXPECT_TRUE(b.take(t0));
  EXPECT_FALSE(b.take(t0));
  EXPECT_DOUBLE_EQ(b.tokens(t0 + 50ms), 0.5);
  EXPECT_FALSE(b.take(t0 + 50ms));
  EXPECT_TRUE(b.take(t0 + 100ms));
  EXPECT_DOUBLE_EQ(b.tokens(t0 + 1h), 3);
}

TEST(TokenBucket, AReshapeKeepsTheTokensHeldAndAppliesTheNewRateFromThen) {
  TokenBucket b(4, 100ms, t0);
  ASSERT_TRUE(b.take(t0));
  ASSERT_TRUE(b.take(t0));
  ASSERT_TRUE(b.take(t0));  // 1 left
  // Twice the room and a token every 10 ms from t0 + 50 ms: the half token
  // gained until then stays, the room is not filled.
  b.reshape(8, 10ms, t0 + 50ms);
  EXPECT_DOUBLE_EQ(b.capacity(), 8);
  EXPECT_DOUBLE_EQ(b.tokens(t0 + 50ms), 1.5);
  EXPECT_DOUBLE_EQ(b.tokens(t0 + 70ms), 3.5);
  EXPECT_DOUBLE_EQ(b.tokens(t0 + 1s), 8);
  // Less room: what is held is cut to it.
  b.reshape(2, 10ms, t0 + 1s);
  EXPECT_DOUBLE_EQ(b.tokens(t0 + 1s), 2);
  EXPECT_TRUE(b.take(t0 + 1s));
  EXPECT_TRUE(b.take(t0 + 1s));
  EXPECT_FALSE(b.take(t0 + 1s));
}

}  // namespace
}  // namespace rdma_exporter
