// exporter/probe/ud/admissions: how the admitted prober queue pairs split
// by the GIDs of this host's own group. The admission and answer rules are
// tested in tests/unit/exporter/probe/verbs/access_test.cpp, beside the
// queue pair's access.

#include "exporter/probe/ud/admissions.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <set>

namespace rdma_exporter::probe {
namespace {

Gid admitted_gid(uint8_t last) {
  Gid g{};
  g[0] = 0xfe;
  g[15] = last;
  return g;
}

TEST(UdAdmissions, PeersSplitByTheGidsGiven) {
  UdAdmissions table;
  const auto t0 = UdAdmissions::Clock::now();
  const UdAdmission a{0x1111, 0, 0, std::chrono::milliseconds(1000)};
  // Three queue pairs of GID 1 (one with two admissions), one of GID 2, two of GID 3.
  ASSERT_TRUE(table.admit(admitted_gid(1), 0x10, a, t0));
  ASSERT_TRUE(table.admit(admitted_gid(1), 0x10, a, t0));
  ASSERT_TRUE(table.admit(admitted_gid(1), 0x11, a, t0));
  ASSERT_TRUE(table.admit(admitted_gid(1), 0x12, a, t0));
  const auto gone = table.admit(admitted_gid(2), 0x20, a, t0);
  ASSERT_TRUE(gone);
  ASSERT_TRUE(table.admit(admitted_gid(3), 0x30, a, t0));
  ASSERT_TRUE(table.admit(admitted_gid(3), 0x31, a, t0));
  EXPECT_EQ(table.peers_split({admitted_gid(1), admitted_gid(2)}),
            std::make_pair(std::size_t{4}, std::size_t{2}));
  EXPECT_EQ(table.peers_split({admitted_gid(3)}), std::make_pair(std::size_t{2}, std::size_t{4}));
  EXPECT_EQ(table.peers_split({}), std::make_pair(std::size_t{0}, std::size_t{6}));
  // A GID no queue pair has counts nothing.
  EXPECT_EQ(table.peers_split({admitted_gid(9)}), std::make_pair(std::size_t{0}, std::size_t{6}));
  table.revoke(*gone, t0);
  EXPECT_EQ(table.peers_split({admitted_gid(1), admitted_gid(2)}),
            std::make_pair(std::size_t{3}, std::size_t{2}));
}

}  // namespace
}  // namespace rdma_exporter::probe
