#include "exporter/http/handlers.hpp"

#include <gtest/gtest.h>

#include "exporter/http/rate_limiter.hpp"

namespace rdma_exporter {
namespace {

TEST(RateLimiter, ABurstThenOneTokenPerInterval) {
  using namespace std::chrono_literals;
  const RateLimiter::Clock::time_point t0{};
  RateLimiter limiter(10s, 3, t0);
  EXPECT_TRUE(limiter.allow(t0));
  EXPECT_TRUE(limiter.allow(t0));
  EXPECT_TRUE(limiter.allow(t0));
  EXPECT_FALSE(limiter.allow(t0));
  EXPECT_FALSE(limiter.allow(t0 + 9s));
  EXPECT_TRUE(limiter.allow(t0 + 10s));  // one token came back
  EXPECT_FALSE(limiter.allow(t0 + 10s));
  EXPECT_TRUE(limiter.allow(t0 + 20s));
  // A long pause refills the bucket to the burst, not beyond.
  const auto later = t0 + 1h;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.allow(later)) << i;
  EXPECT_FALSE(limiter.allow(later));
  // Refused requests take nothing: 5s plus 5s makes one token.
  EXPECT_FALSE(limiter.allow(later + 5s));
  EXPECT_TRUE(limiter.allow(later + 10s));
}

TEST(AcceptEncoding, GzipIsChosenOnlyWhenAccepted) {
  EXPECT_TRUE(accepts_gzip("gzip"));
  EXPECT_TRUE(accepts_gzip("deflate, gzip"));
  EXPECT_TRUE(accepts_gzip("gzip;q=0.5, identity"));
  EXPECT_TRUE(accepts_gzip("*"));
  EXPECT_TRUE(accepts_gzip(" br ,  gzip ; q=1"));
  EXPECT_FALSE(accepts_gzip(""));
  EXPECT_FALSE(accepts_gzip("identity"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("x-gzip-not"));
  EXPECT_FALSE(accepts_gzip("deflate"));
}

}  // namespace
}  // namespace rdma_exporter
