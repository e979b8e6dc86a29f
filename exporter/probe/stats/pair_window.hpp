#pragma once

#include <array>
#include <chrono>
#include <cstdint>

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

  struct Totals {
    uint64_t sent = 0;
    uint64_t lost = 0;    // no reply in time (UD lost, RC timeout)
    uint64_t failed = 0;  // sessions or probes that failed (errors)
    bool operator==(const Totals&) const = default;
  };

  void sent(Clock::time_point now) { step(now).sent += 1; }
  void lost(Clock::time_point now) { step(now).lost += 1; }
  void failed(Clock::time_point now) { step(now).failed += 1; }

  // What the steps still in the window at `now` hold.
  Totals totals(Clock::time_point now) const;
  // A probe lost or failed in the window.
  bool failing(Clock::time_point now) const {
    const Totals t = totals(now);
    return t.lost + t.failed > 0;
  }

 private:
  static constexpr std::size_t kSteps = kWindow / kStep;
  static int64_t step_number(Clock::time_point t) { return t.time_since_epoch() / kStep; }
  Totals& step(Clock::time_point now);

  struct Step {
    int64_t number = -1;  // which step of the clock this slot holds
    Totals counts;
  };
  std::array<Step, kSteps> steps_{};
};

}  // namespace rdma_exporter::probe
