#include "exporter/probe/stats/pair_window.hpp"

namespace rdma_exporter::probe {

PairWindow::Totals& PairWindow::step(Clock::time_point now) {
  const int64_t n = step_number(now);
  const std::size_t i = slot_of(n);
  Step& slot = steps_[i];
  if (slot.number != n) {
    // The slot held a step that has left the window (or none yet).
    slot.number = n;
    slot.counts = {};
    if (paths_) (*paths_)[i] = {};
  }
  return slot.counts;
}

void PairWindow::lost(Clock::time_point now, std::size_t path) {
  lost(now);
  if (path >= kPaths) return;
  if (!paths_) paths_ = std::make_unique<std::array<PathCounts, kSteps>>();
  (*paths_)[slot_of(step_number(now))][path] += 1;
}

PairWindow::Totals PairWindow::totals(Clock::time_point now) const {
  const int64_t last = step_number(now);
  Totals sum;
  for (const Step& s : steps_) {
    // Steps of the future (a clock read earlier than the last count) are
    // counted too: the window never drops what was counted in it.
    if (!in_window(s.number, last)) continue;
    sum.sent += s.counts.sent;
    sum.lost += s.counts.lost;
    sum.failed += s.counts.failed;
    sum.answered += s.counts.answered;
  }
  return sum;
}

PairWindow::PathCounts PairWindow::path_lost(Clock::time_point now) const {
  PathCounts sum{};
  if (!paths_) return sum;
  const int64_t last = step_number(now);
  for (std::size_t i = 0; i < kSteps; ++i) {
    if (!in_window(steps_[i].number, last)) continue;
    for (std::size_t p = 0; p < kPaths; ++p) sum[p] += (*paths_)[i][p];
  }
  return sum;
}

}  // namespace rdma_exporter::probe
