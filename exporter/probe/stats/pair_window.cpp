#include "exporter/probe/stats/pair_window.hpp"

namespace rdma_exporter::probe {

PairWindow::Totals& PairWindow::step(Clock::time_point now) {
  const int64_t n = step_number(now);
  Step& slot = steps_[static_cast<std::size_t>(n % static_cast<int64_t>(kSteps))];
  if (slot.number != n) {
    // The slot held a step that has left the window (or none yet).
    slot.number = n;
    slot.counts = {};
  }
  return slot.counts;
}

PairWindow::Totals PairWindow::totals(Clock::time_point now) const {
  const int64_t last = step_number(now);
  Totals sum;
  for (const Step& s : steps_) {
    // Steps of the future (a clock read earlier than the last count) are
    // counted too: the window never drops what was counted in it.
    if (s.number < 0 || s.number <= last - static_cast<int64_t>(kSteps)) continue;
    sum.sent += s.counts.sent;
    sum.lost += s.counts.lost;
    sum.failed += s.counts.failed;
  }
  return sum;
}

}  // namespace rdma_exporter::probe
