#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

// A pair's probes over the culprit rules' last two minutes, in steps:
// the evidence a pair carries off the host (rdma_probe_pair_window_*).
namespace rdma_exporter::probe {

class PairWindow {
 public:
  using Clock = std::chrono::steady_clock;
  // The culprit rules' window (config/prometheus/rdma-culprits.yml) and
  // the step it is kept in: a step's counts leave the window whole, so the
  // window holds between kWindow - kStep and kWindow of history.
  static constexpr Clock::duration kWindow = std::chrono::minutes(2);
  static constexpr Clock::duration kStep = std::chrono::seconds(10);
  // UD paths (flow labels) a pair's losses are kept by: a class has 1 to
  // 16 (probe.classes[].flows).
  static constexpr std::size_t kPaths = 16;
  using PathCounts = std::array<uint64_t, kPaths>;

  struct Totals {
    uint64_t sent = 0;
    uint64_t lost = 0;      // no reply in time (UD lost, RC timeout)
    uint64_t failed = 0;    // sessions or probes that failed (errors)
    uint64_t answered = 0;  // successful probes (timed ones)
    bool operator==(const Totals&) const = default;
  };

  void sent(Clock::time_point now) { step(now).sent += 1; }
  void lost(Clock::time_point now) { step(now).lost += 1; }
  // A UD probe lost on `path` (paths from kPaths on count as lost only).
  void lost(Clock::time_point now, std::size_t path);
  void failed(Clock::time_point now) { step(now).failed += 1; }
  void answered(Clock::time_point now) { step(now).answered += 1; }

  // What the steps still in the window at `now` hold.
  Totals totals(Clock::time_point now) const;
  // Of the losses in the window, those on each path (all 0 for a pair that
  // never lost a probe on a path).
  PathCounts path_lost(Clock::time_point now) const;
  // A probe lost or failed in the window.
  bool failing(Clock::time_point now) const {
    const Totals t = totals(now);
    return t.lost + t.failed > 0;
  }

 private:
  static constexpr std::size_t kSteps = kWindow / kStep;
  static int64_t step_number(Clock::time_point t) { return t.time_since_epoch() / kStep; }
  static std::size_t slot_of(int64_t step) {
    return static_cast<std::size_t>(step % static_cast<int64_t>(kSteps));
  }
  // Whether a slot holding `step` is in the window that ends in step `last`.
  static bool in_window(int64_t step, int64_t last) {
    return step >= 0 && step > last - static_cast<int64_t>(kSteps);
  }
  Totals& step(Clock::time_point now);

  struct Step {
    int64_t number = -1;  // which step of the clock this slot holds
    Totals counts;
  };
  std::array<Step, kSteps> steps_{};
  // Losses by path, per slot of steps_: made at a pair's first loss on a
  // path, so that the many pairs that never lose one carry none.
  std::unique_ptr<std::array<PathCounts, kSteps>> paths_;
};

}  // namespace rdma_exporter::probe
