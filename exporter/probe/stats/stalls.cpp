#include "exporter/probe/stats/stalls.hpp"

namespace rdma_exporter::probe {

const prometheus::Histogram::BucketBoundaries& StallWatch::duration_buckets() {
  static const prometheus::Histogram::BucketBoundaries buckets = {0.5, 1, 2, 4, 8, 16};
  return buckets;
}

void StallWatch::armed(Clock::time_point beat, Clock::time_point due) {
  if (open_) {
    open_ = false;
    const double late =
        std::chrono::duration<double>(stalls_.back().to - stalls_.back().due).count();
    const std::lock_guard lock(mutex_);
    durations_.Observe(late);
  }
  armed_ = true;
  beat_ = beat;
  due_ = due;
}

void StallWatch::check(Clock::time_point now) {
  if (!armed_ || now - due_ < threshold_) return;
  bool fresh = false;
  double added = 0;
  if (!stalls_.empty() && stalls_.back().due == due_) {
    if (now <= stalls_.back().to) return;
    added = std::chrono::duration<double>(now - stalls_.back().to).count();
    stalls_.back().to = now;
  } else {
    fresh = true;
    open_ = true;
    stalls_.push_back(Stall{beat_, now, due_});
    if (stalls_.size() > kKept) stalls_.pop_front();
    added = std::chrono::duration<double>(now - due_).count();
  }
  const std::lock_guard lock(mutex_);
  if (fresh) ++count_;
  seconds_ += added;
}

bool StallWatch::stalled_between(Clock::time_point from, Clock::time_point to) const {
  for (auto it = stalls_.rbegin(); it != stalls_.rend(); ++it) {
    if (it->from <= to && from <= it->to) return true;
    if (it->to < from) break;  // older ones end earlier still
  }
  return false;
}

void StallWatch::add_metrics(MetricSink& sink) const {
  const std::lock_guard lock(mutex_);
  sink.counter("rdma_probe_stalls_total",
               "Times the probe's event loop ran its heartbeat (every 100 ms) 200 ms or more "
               "late: the host starved or stopped the exporter. Probes in flight meanwhile count "
               "as invalid.",
               {}, static_cast<double>(count_));
  sink.counter("rdma_probe_stall_seconds_total",
               "How late the probe's event loop ran its heartbeat in those stalls, summed.", {},
               seconds_);
  sink.histogram(
      "rdma_probe_stall_duration_seconds",
      "The probe's event loop stalls once over, by how late they made its heartbeat run. One "
      "longer than the 4 timeouts a UD prober waits for a late reply (4 s by default) makes its "
      "probers count losses.",
      {}, durations_.Collect());
}

}  // namespace rdma_exporter::probe
