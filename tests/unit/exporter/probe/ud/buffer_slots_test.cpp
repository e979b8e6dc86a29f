// exporter/probe/ud/buffer_slots: where each receive and send slot lies in
// a UD port's one buffer.

#include "exporter/probe/ud/buffer_slots.hpp"

#include <gtest/gtest.h>

namespace rdma_exporter::probe {
namespace {

// Each number distinct, so a size read from the wrong field shows.
constexpr UdBufferSlots kSlots{/*max_size=*/1000, /*recv_depth=*/7, /*send_depth=*/3};

TEST(ProbeUdBufferSlots, AReceiveSlotHoldsTheGrhAndTheLargestDatagram) {
  EXPECT_EQ(kSlots.recv_slot_size(), 1040u);
  EXPECT_EQ(kSlots.recv_offset(0), 0u);
  EXPECT_EQ(kSlots.recv_offset(1), 1040u);
  EXPECT_EQ(kSlots.recv_offset(6), 6240u);
}

TEST(ProbeUdBufferSlots, SendSlotsFollowTheLastReceiveSlot) {
  EXPECT_EQ(kSlots.send_offset(0), 7280u);  // 7 receive slots of 1040
  EXPECT_EQ(kSlots.send_offset(1), 8280u);
  EXPECT_EQ(kSlots.send_offset(2), 9280u);
}

TEST(ProbeUdBufferSlots, TheBufferEndsAfterTheLastSendSlot) {
  EXPECT_EQ(kSlots.size(), 10280u);  // 7 * 1040 + 3 * 1000
  constexpr UdBufferSlots none{64, 0, 0};
  EXPECT_EQ(none.size(), 0u);
}

TEST(ProbeUdBufferSlots, LargeDepthsDoNotWrapIn32Bits) {
  // 65536 receive slots of 64 KiB and the GRH: past 4 GiB.
  constexpr UdBufferSlots big{65536, 65536, 1};
  EXPECT_EQ(big.recv_offset(65535), 65535ull * 65576ull);
  EXPECT_EQ(big.send_offset(0), 65536ull * 65576ull);
}

}  // namespace
}  // namespace rdma_exporter::probe
