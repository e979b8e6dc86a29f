#pragma once

#include <prometheus/histogram.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>

#include "common/metric_sink.hpp"

// The probe's event loop watching itself. A heartbeat timer runs every
// kHeartbeat (the service arms it and says so with armed()); any handler
// that runs while the heartbeat is kStallThreshold or more overdue, and
// calls check(), records a stall: the loop ran nothing from the last beat
// until that moment. A starved CPU, a stopped process, a paused VM and a
// handler that blocked all look alike here. Probes whose life overlaps a
// stall count as invalid, never as lost or slow (UdProber), and a
// responder flags the replies it answered late because of one.
//
// The event loop writes and asks; the collecting thread reads the totals.
namespace rdma_exporter::probe {

inline constexpr std::chrono::milliseconds kHeartbeat{100};
inline constexpr std::chrono::milliseconds kStallThreshold{200};

class StallWatch {
 public:
  using Clock = std::chrono::steady_clock;

  explicit StallWatch(Clock::duration threshold = kStallThreshold) : threshold_(threshold) {}

  // The heartbeat ran at `beat` and is next due at `due`; a stall that made
  // the previous beat late is over.
  void armed(Clock::time_point beat, Clock::time_point due);
  // Records a stall when the heartbeat is `threshold` or more overdue at
  // `now`; a stall still going on is extended.
  void check(Clock::time_point now);
  // Whether a recorded stall overlaps [from, to].
  bool stalled_between(Clock::time_point from, Clock::time_point to) const;

  // rdma_probe_stalls_total, rdma_probe_stall_seconds_total, and
  // rdma_probe_stall_duration_seconds: each stall once it is over, by how
  // late the heartbeat ran. Only a stall longer than the 4 timeouts a UD
  // prober waits for a late reply (4 s by default) makes its probers count
  // losses: the culprit rules read the bucket of 4 s.
  void add_metrics(MetricSink& sink) const;

  // The histogram's buckets, seconds.
  static const prometheus::Histogram::BucketBoundaries& duration_buckets();

  // Stalls remembered for stalled_between(): the oldest go first.
  static constexpr std::size_t kKept = 64;

 private:
  struct Stall {
    Clock::time_point from;  // the last beat before it
    Clock::time_point to;    // the latest moment it was seen going on
    Clock::time_point due;   // the beat it made late
  };

  const Clock::duration threshold_;
  bool armed_ = false;
  Clock::time_point beat_;
  Clock::time_point due_;
  std::deque<Stall> stalls_;
  bool open_ = false;  // the last stall is not over yet

  mutable std::mutex mutex_;  // the totals
  uint64_t count_ = 0;
  double seconds_ = 0;  // how late the heartbeat ran, summed
  prometheus::Histogram durations_{duration_buckets()};
};

}  // namespace rdma_exporter::probe
