#include "common/token_bucket.hpp"

#include <algorithm>

namespace rdma_exporter {

TokenBucket::TokenBucket(double capacity, Clock::duration per_token, Clock::time_point now)
    : capacity_(capacity), per_token_(per_token), tokens_(capacity), last_(now) {}

double TokenBucket::tokens(Clock::time_point now) const {
  if (per_token_ <= Clock::duration::zero()) return capacity_;  // no limit on the rate
  if (now <= last_) return tokens_;
  const double gained =
      std::chrono::duration<double>(now - last_) / std::chrono::duration<double>(per_token_);
  return std::min(capacity_, tokens_ + gained);
}

bool TokenBucket::take(Clock::time_point now) {
  tokens_ = tokens(now);
  if (now > last_) last_ = now;
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

void TokenBucket::reshape(double capacity, Clock::duration per_token, Clock::time_point now) {
  tokens_ = std::min(tokens(now), capacity);
  if (now > last_) last_ = now;
  capacity_ = capacity;
  per_token_ = per_token;
}

}  // namespace rdma_exporter
