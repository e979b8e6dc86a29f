// A UD receive's sender from its first 40 bytes (the GRH or the IPv4
// header), and the flow label of each path.

#include "exporter/probe/ud/addressing.hpp"

#include <gtest/gtest.h>

namespace rdma_exporter::probe {
namespace {

// RoCE v2 over IPv4: 20 zero bytes, then an IPv4 header from 192.168.100.7
// to 192.168.100.9.
TEST(ProbeUdGrh, Ipv4HeaderGivesTheMappedSourceAddress) {
  std::array<uint8_t, 40> grh{};
  const std::array<uint8_t, 20> ip = {0x45, 0x00, 0x00, 0x5c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11,
                                      0x00, 0x00, 192,  168,  100,  7,    192,  168,  100,  9};
  std::copy(ip.begin(), ip.end(), grh.begin() + 20);
  const auto gid = grh_source_gid(grh);
  ASSERT_TRUE(gid);
  EXPECT_EQ(*gid, (Gid{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 100, 7}));
}

// A GRH (InfiniBand, RoCE v1, RoCE v2 over IPv6): version 6, the source GID
// at bytes 8 to 23, the destination at 24 to 39.
TEST(ProbeUdGrh, GrhGivesItsSourceGid) {
  std::array<uint8_t, 40> grh{};
  grh[0] = 0x60;
  const Gid src = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0x12, 0x34, 0x56};
  std::copy(src.begin(), src.end(), grh.begin() + 8);
  std::fill(grh.begin() + 24, grh.end(), 0xaa);
  EXPECT_EQ(grh_source_gid(grh), src);
  // Neither an IPv4 header after 20 zero bytes nor version 6.
  grh[0] = 0x40;
  EXPECT_FALSE(grh_source_gid(grh));
  std::array<uint8_t, 40> almost_ipv4{};
  almost_ipv4[20] = 0x45;
  almost_ipv4[3] = 1;  // not 20 zero bytes
  EXPECT_FALSE(grh_source_gid(almost_ipv4));
}

TEST(ProbeUdPaths, FlowLabelsAreDistinctNonZeroAndTwentyBits) {
  EXPECT_EQ(path_flow_label(0), 0x9e37u);
  EXPECT_EQ(path_flow_label(1), 0x13c6eu);
  std::set<uint32_t> seen;
  for (int p = 0; p < 16; ++p) {
    const uint32_t f = path_flow_label(static_cast<uint8_t>(p));
    EXPECT_NE(f, 0u);
    EXPECT_LE(f, 0xfffffu);
    seen.insert(f);
  }
  EXPECT_EQ(seen.size(), 16u);
}

}  // namespace
}  // namespace rdma_exporter::probe
