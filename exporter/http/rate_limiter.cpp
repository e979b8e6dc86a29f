#include "exporter/http/rate_limiter.hpp"

#include <algorithm>

namespace rdma_exporter {

RateLimiter::RateLimiter(Duration interval, int burst, Clock::time_point now)
    : interval_(interval), burst_(burst), tokens_(burst), last_(now) {}

bool RateLimiter::allow(Clock::time_point now) {
  if (now > last_) {
    const double gained =
        std::chrono::duration<double>(now - last_) / std::chrono::duration<double>(interval_);
    tokens_ = std::min<double>(burst_, tokens_ + gained);
    last_ = now;
  }
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

}  // namespace rdma_exporter
