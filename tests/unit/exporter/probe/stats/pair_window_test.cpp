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

TEST(PairWindow, CountsWhatWasSentLostFailedAndAnsweredInTheWindow) {
  PairWindow w;
  for (int i = 0; i < 7; ++i) w.sent(kStart + std::chrono::seconds(i));
  w.lost(kStart + 3s);
  w.lost(kStart + 15s);
  w.failed(kStart + 31s);
  for (int i = 0; i < 4; ++i) w.answered(kStart + std::chrono::seconds(20 + i));
  EXPECT_EQ(w.totals(kStart + 40s), (Totals{7, 2, 1, 4}));
  EXPECT_TRUE(w.failing(kStart + 40s));
}

TEST(PairWindow, KeepsLossesByPathInTheWindow) {
  PairWindow w;
  EXPECT_EQ(w.path_lost(kStart), PairWindow::PathCounts{});
  w.lost(kStart + 1s, 2);
  w.lost(kStart + 2s, 2);
  w.lost(kStart + 15s, 7);
  w.lost(kStart + 16s, 15);
  w.lost(kStart + 25s, 5);   // step 2, counted before the late ones of step 1
  w.lost(kStart + 17s, 16);  // beyond the paths: lost only, no other path touched
  w.lost(kStart + 18s);      // an RC timeout: no path
  PairWindow::PathCounts expected{};
  expected[2] = 2;
  expected[5] = 1;
  expected[7] = 1;
  expected[15] = 1;
  EXPECT_EQ(w.path_lost(kStart + 25s), expected);
  EXPECT_EQ(w.totals(kStart + 25s).lost, 7u);
  // Step 0 leaves the window; step 1's losses stay.
  expected[2] = 0;
  EXPECT_EQ(w.path_lost(kStart + 120s), expected);
  // Its slot, reused by a later step, starts empty.
  w.lost(kStart + 121s, 3);
  expected[3] = 1;
  EXPECT_EQ(w.path_lost(kStart + 121s), expected);
  EXPECT_EQ(w.path_lost(kStart + 1h), PairWindow::PathCounts{});
}

TEST(PairWindow, AnswersAloneAreNotAFailure) {
  PairWindow w;
  w.sent(kStart);
  w.answered(kStart + 1s);
  EXPECT_EQ(w.totals(kStart + 2s), (Totals{1, 0, 0, 1}));
  EXPECT_FALSE(w.failing(kStart + 2s));
  // Answers leave the window with their step, as losses do.
  EXPECT_EQ(w.totals(kStart + 120s), (Totals{0, 0, 0, 0}));
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
