#include "exporter/http/rate_limiter.hpp"

namespace rdma_exporter {

RateLimiter::RateLimiter(Duration interval, int burst, Clock::time_point now)
    : interval_(interval), burst_(burst), bucket_(burst, interval, now) {}

bool RateLimiter::allow(Clock::time_point now) {
  return bucket_.take(now);
}

}  // namespace rdma_exporter
