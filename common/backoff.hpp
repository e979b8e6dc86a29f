#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace rdma_exporter {

// How a retry loop backs off: the n-th failure in a row waits
// `initial` * 2^(n-1), at most `max`, times a factor drawn uniformly from
// [jitter_low, jitter_high] so that peers which failed together do not
// retry in step.
struct BackoffPolicy {
  std::chrono::milliseconds initial{500};
  std::chrono::milliseconds max{30000};
  double jitter_low = 0.8;
  double jitter_high = 1.2;
};

// Exponential backoff with jitter, the one every retry loop uses (the
// probe's discovery and sessions, the OTLP pusher). Not thread-safe.
class Backoff {
 public:
  explicit Backoff(BackoffPolicy policy, std::uint32_t seed = std::random_device{}());

  // Records a failure; returns how long to wait before trying again.
  std::chrono::milliseconds failed();
  // Records a success; returns whether failures came before it. The next
  // failure waits `initial` again.
  bool succeeded();

  // Failures since the last success.
  unsigned failures() const { return failures_; }
  // The delay of the last failure before jitter; 0 after a success.
  std::chrono::milliseconds base() const { return base_; }
  const BackoffPolicy& policy() const { return policy_; }

 private:
  BackoffPolicy policy_;
  std::mt19937 rng_;
  unsigned failures_ = 0;
  std::chrono::milliseconds base_{0};
};

}  // namespace rdma_exporter
