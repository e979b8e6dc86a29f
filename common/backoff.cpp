#include "common/backoff.hpp"

#include <algorithm>

namespace rdma_exporter {

Backoff::Backoff(BackoffPolicy policy, std::uint32_t seed) : policy_(policy), rng_(seed) {}

std::chrono::milliseconds Backoff::failed() {
  ++failures_;
  base_ = failures_ == 1 ? policy_.initial : std::min(policy_.max, base_ * 2);
  base_ = std::min(base_, policy_.max);
  std::uniform_real_distribution<double> factor(policy_.jitter_low, policy_.jitter_high);
  return std::chrono::milliseconds(
      static_cast<long long>(static_cast<double>(base_.count()) * factor(rng_)));
}

bool Backoff::succeeded() {
  const bool after_failures = failures_ != 0;
  failures_ = 0;
  base_ = std::chrono::milliseconds(0);
  return after_failures;
}

}  // namespace rdma_exporter
