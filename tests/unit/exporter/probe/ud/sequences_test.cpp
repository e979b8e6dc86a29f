// exporter/probe/ud/sequences: what the sequence numbers of the requests
// a port receives say was sent to it: gaps, late requests, probers that
// start over, sessions told apart and forgotten, and the bounds (in all and
// per prober queue pair).

#include "exporter/probe/ud/sequences.hpp"

#include <gtest/gtest.h>

namespace rdma_exporter::probe {
namespace {

Gid gid(uint8_t b) {
  Gid g{};
  g.fill(b);
  return g;
}

TEST(ProbeUdSequences, AGapCountsTheRequestsInBetweenAsExpected) {
  UdSequences s;
  EXPECT_EQ(s.received(gid(1), 0x10, 7, 5), 1u);  // the first counts from itself
  EXPECT_EQ(s.received(gid(1), 0x10, 7, 6), 1u);
  EXPECT_EQ(s.received(gid(1), 0x10, 7, 9), 3u);  // 7 and 8 were lost
  EXPECT_EQ(s.expected(), 5u);
  EXPECT_EQ(s.received(), 3u);
  // 8 comes late: received, expected already.
  EXPECT_EQ(s.received(gid(1), 0x10, 7, 8), 0u);
  EXPECT_EQ(s.received(gid(1), 0x10, 7, 9), 0u);  // and 9 again
  EXPECT_EQ(s.expected(), 5u);
  EXPECT_EQ(s.received(), 5u);
}

TEST(ProbeUdSequences, SessionsAreToldApartByGidQpnAndNumber) {
  UdSequences s;
  s.received(gid(1), 0x10, 7, 100);
  s.received(gid(2), 0x10, 7, 1);   // another GID
  s.received(gid(1), 0x11, 7, 50);  // another queue pair
  s.received(gid(1), 0x10, 8, 3);   // another session of the queue pair
  EXPECT_EQ(s.sessions(), 4u);
  EXPECT_EQ(s.expected(), 4u);
  EXPECT_EQ(s.received(gid(1), 0x10, 7, 102), 2u);
  EXPECT_EQ(s.received(gid(2), 0x10, 7, 2), 1u);
  EXPECT_EQ(s.received(gid(1), 0x11, 7, 54), 4u);
  EXPECT_EQ(s.received(gid(1), 0x10, 8, 4), 1u);
  EXPECT_EQ(s.expected(), 12u);
  EXPECT_EQ(s.received(), 8u);
}

TEST(ProbeUdSequences, AJumpBeyondTheGapLimitIsAProberStartingOver) {
  UdSequences s;
  s.received(gid(1), 0x10, 7, 10);
  EXPECT_EQ(s.received(gid(1), 0x10, 7, 10 + UdSequences::kMaxGap), UdSequences::kMaxGap);
  EXPECT_EQ(s.received(gid(1), 0x10, 7, 11 + 2 * UdSequences::kMaxGap), 1u);  // up
  EXPECT_EQ(s.received(gid(1), 0x10, 7, 1), 1u);                              // down
  EXPECT_EQ(s.received(gid(1), 0x10, 7, 3), 2u);  // and goes on from there
  EXPECT_EQ(s.expected(), 1 + UdSequences::kMaxGap + 1 + 1 + 2);
}

TEST(ProbeUdSequences, AForgottenQueuePairStartsAfresh) {
  UdSequences s;
  s.received(gid(1), 0x10, 7, 10);
  s.received(gid(1), 0x10, 8, 10);
  s.received(gid(2), 0x10, 7, 10);
  s.forget(gid(1), 0x10);
  EXPECT_EQ(s.sessions(), 1u);
  EXPECT_EQ(s.received(gid(1), 0x10, 7, 20), 1u);  // not 10: a new session
  EXPECT_EQ(s.received(gid(2), 0x10, 7, 12), 2u);  // the other is kept
}

TEST(ProbeUdSequences, BeyondTheBoundTheSessionSeenLeastRecentlyGoes) {
  UdSequences s;
  for (uint32_t i = 0; i < UdSequences::kMaxSessions; ++i) s.received(gid(1), i, 1, 1);
  s.received(gid(1), 0, 1, 2);  // session 0 seen again: session 1 is the oldest
  s.received(gid(9), 0, 1, 1);  // one more
  EXPECT_EQ(s.sessions(), UdSequences::kMaxSessions);
  EXPECT_EQ(s.received(gid(1), 0, 1, 4), 2u);  // kept
  EXPECT_EQ(s.received(gid(1), 1, 1, 4), 1u);  // gone: counts from itself
}

TEST(ProbeUdSequences, OneQueuePairsSessionsNeverPushOutAnothers) {
  UdSequences s;
  s.received(gid(2), 0x20, 1, 10);  // another prober
  // An admitted prober sends under far more session numbers than the bound.
  const uint32_t numbers = 2 * UdSequences::kMaxSessions;
  for (uint32_t n = 0; n < numbers; ++n) s.received(gid(1), 0x10, n, 1);
  EXPECT_EQ(s.sessions(), 1 + UdSequences::kMaxSessionsPerQp);
  EXPECT_EQ(s.received(gid(2), 0x20, 1, 13), 3u);  // still followed: 11 and 12 lost
  // The flooding queue pair keeps its most recent sessions only.
  const uint32_t oldest_kept = numbers - UdSequences::kMaxSessionsPerQp;
  EXPECT_EQ(s.received(gid(1), 0x10, oldest_kept, 4), 3u);      // kept: 2 and 3 lost
  EXPECT_EQ(s.received(gid(1), 0x10, oldest_kept - 1, 5), 1u);  // gone: counts from itself
  EXPECT_EQ(s.sessions(), 1 + UdSequences::kMaxSessionsPerQp);
}

}  // namespace
}  // namespace rdma_exporter::probe
