// A pair's window: what it sent, lost and failed over the last two minutes,
// kept in 10 s steps. Time is a clock the test sets.

#include "exporter/probe/stats/pair_window.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace rdma_exporter::probe {
namespace {

using namespace std::chrono_literals;
using Totals = PairWindow::Totals;

// The start of a 10 s step, far from the clock's epoch.
const PairWindow::Clock::time_point kStart = PairWindow::Clock::time_point{} + 1000h;

TEST(PairWindow, CountsWhatWasSentLostAndFailedInTheWindow) {
  PairWindow w;
  for (int i = 0; i < 7; ++i) w.sent(kStart + std::chrono::seconds(i));
  w.lost(kStart + 3s);
  w.lost(kStart + 15s);
  w.failed(kStart + 31s);
  EXPECT_EQ(w.totals(kStart + 40s), (Totals{7, 2, 1}));
  EXPECT_TRUE(w.failing(kStart + 40s));
}

TEST(PairWindow, APairThatFailsThenHealsLeavesItStepByStep) {
  PairWindow w;
  // One probe a second, sent up to (not including) second `to`.
  int next = 0;
  const auto send_until = [&](int to) {
    for (; next < to; ++next) w.sent(kStart + std::chrono::seconds(next));
  };
  send_until(6);
  w.lost(kStart + 5s);  // step 0
  send_until(26);
  w.failed(kStart + 25s);  // step 2
  // Healthy from then on: every probe answered. Step 0 is in the window
  // until the 12th step after it begins.
  send_until(120);
  EXPECT_EQ(w.totals(kStart + 119s), (Totals{120, 1, 1}));
  send_until(121);
  EXPECT_EQ(w.totals(kStart + 120s), (Totals{111, 0, 1}));
  send_until(140);
  EXPECT_TRUE(w.failing(kStart + 139s));
  send_until(141);
  EXPECT_FALSE(w.failing(kStart + 140s));
  // The window now holds steps 3 to 14: the probes sent from 30 s to 140 s.
  EXPECT_EQ(w.totals(kStart + 140s), (Totals{111, 0, 0}));
}

TEST(PairWindow, ASlotIsReusedOnlyForTheStepItNowHolds) {
  PairWindow w;
  w.lost(kStart);
  // 12 steps later the same slot holds a new step: the old loss is gone.
  w.sent(kStart + 120s);
  EXPECT_EQ(w.totals(kStart + 120s), (Totals{1, 0, 0}));
  // A pair that was quiet for far longer than the window holds nothing.
  w.lost(kStart + 121s);
  EXPECT_EQ(w.totals(kStart + 1h), (Totals{0, 0, 0}));
  EXPECT_FALSE(w.failing(kStart + 1h));
}

TEST(PairWindow, AQuietPairsLossLeavesWhenItsStepIsTwelveStepsOld) {
  PairWindow w;
  w.lost(kStart + 9s);  // step 0, the last of its seconds
  // Nothing else happens: no later step takes the slot.
  EXPECT_EQ(w.totals(kStart + 119s), (Totals{0, 1, 0}));
  EXPECT_EQ(w.totals(kStart + 120s), (Totals{0, 0, 0}));
  EXPECT_FALSE(w.failing(kStart + 120s));
}

TEST(PairWindow, ANewWindowHoldsNothing) {
  const PairWindow w;
  EXPECT_EQ(w.totals(kStart), (Totals{0, 0, 0}));
  EXPECT_FALSE(w.failing(kStart));
}

}  // namespace
}  // namespace rdma_exporter::probe
