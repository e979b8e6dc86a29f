// The UD prober's timing split: the network's share of a round trip, and
// what each host's delay adds, by the device's clock or the host's.

#include <gtest/gtest.h>

#include "exporter/probe/probers/ud_prober.hpp"

namespace rdma_exporter::probe {
namespace {

// Device clock: T1 = 0, T2 = 2 us, T5 = 12 us, T6 = 15 us, T4 - T3 = 3 us:
// network 12 - 2 - 3 = 7 us, prober delay 15 - 10 = 5 us.
TEST(ProbeUdTiming, DeviceClockSplitsNetworkFromBothHosts) {
  const UdTiming t = ud_timing(15e-6, 10e-6, 3e-6);
  EXPECT_TRUE(t.device_clock);
  EXPECT_NEAR(t.network, 7e-6, 1e-12);
  ASSERT_TRUE(t.prober_delay);
  EXPECT_NEAR(*t.prober_delay, 5e-6, 1e-12);
  EXPECT_NEAR(t.responder_delay, 3e-6, 1e-12);
}

// Host clock: network = (T6 - T1) - (T4 - T3) = 40 - 15 = 25 us; no prober
// delay can be told apart.
TEST(ProbeUdTiming, HostClockTakesTheResponderDelayOnly) {
  const UdTiming t = ud_timing(40e-6, std::nullopt, 15e-6);
  EXPECT_FALSE(t.device_clock);
  EXPECT_NEAR(t.network, 25e-6, 1e-12);
  EXPECT_FALSE(t.prober_delay);
}

TEST(ProbeUdTiming, ClockReadingsOutOfOrderCountAsZero) {
  // A responder delay longer than the round trip, a device round trip
  // longer than the host's.
  const UdTiming t = ud_timing(10e-6, 12e-6, 20e-6);
  EXPECT_EQ(t.network, 0.0);
  ASSERT_TRUE(t.prober_delay);
  EXPECT_EQ(*t.prober_delay, 0.0);
  EXPECT_EQ(ud_timing(1e-6, std::nullopt, -1.0).responder_delay, 0.0);
}

}  // namespace
}  // namespace rdma_exporter::probe
