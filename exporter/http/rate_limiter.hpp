#pragma once

#include <chrono>

#include "common/duration.hpp"
#include "common/token_bucket.hpp"

namespace rdma_exporter {

// The web configuration's rate_limit: a token bucket that holds at most
// `burst` tokens, starts full and gains one token every `interval`. Each
// request takes a token; a request that finds none is refused (429). One
// bucket (common/token_bucket.hpp) serves every listener and client. Used on
// the event loop only.
class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  RateLimiter(Duration interval, int burst, Clock::time_point now = Clock::now());

  // Takes a token if there is one.
  bool allow(Clock::time_point now = Clock::now());

  Duration interval() const { return interval_; }
  int burst() const { return burst_; }

 private:
  Duration interval_;
  int burst_;
  TokenBucket bucket_;
};

}  // namespace rdma_exporter
