#pragma once

#include <chrono>

namespace rdma_exporter {

// A token bucket: holds at most `capacity` tokens, starts full and gains one
// token every `per_token`. The clock is the caller's: every call takes the
// time it happens at, so tests drive it without sleeping. Not thread-safe.
class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;

  TokenBucket(double capacity, Clock::duration per_token, Clock::time_point now);

  // Takes a token if there is one.
  bool take(Clock::time_point now);
  // The tokens there are at `now` (a fraction while one is being gained).
  double tokens(Clock::time_point now) const;
  // Whether the bucket is full at `now`: forgetting it loses nothing.
  bool full(Clock::time_point now) const { return tokens(now) >= capacity_; }
  double capacity() const { return capacity_; }
  // New limits from `now` on, keeping the tokens held then (at most the new
  // capacity): a change of limits never refills the bucket.
  void reshape(double capacity, Clock::duration per_token, Clock::time_point now);

 private:
  double capacity_;
  Clock::duration per_token_;
  double tokens_;
  Clock::time_point last_;
};

}  // namespace rdma_exporter
