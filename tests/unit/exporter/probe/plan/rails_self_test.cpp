// Finding this host in the target list: by address or name, and port.

#include <gtest/gtest.h>

#include "exporter/probe/plan/rails.hpp"

namespace rdma_exporter::probe {
namespace {

TEST(ProbeUdSelf, ATargetIsThisHostByAddressOrNameAndPort) {
  InterfaceAddress v4;
  v4.address = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
  v4.prefix = 24;
  InterfaceAddress v6;
  v6.address = {0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5};
  v6.prefix = 64;
  v6.ipv4 = false;
  const std::vector<InterfaceAddress> mine = {v4, v6};
  EXPECT_TRUE(names_this_host("10.0.0.2:10911", 10911, mine, "node-a"));
  EXPECT_TRUE(names_this_host("[fd00:1::5]:10911", 10911, mine, "node-a"));
  EXPECT_TRUE(names_this_host("node-a:10911", 10911, mine, "node-a"));
  // Another port on this host is another exporter.
  EXPECT_FALSE(names_this_host("10.0.0.2:10921", 10911, mine, "node-a"));
  EXPECT_FALSE(names_this_host("10.0.0.3:10911", 10911, mine, "node-a"));
  EXPECT_FALSE(names_this_host("node-b:10911", 10911, mine, "node-a"));
  EXPECT_FALSE(names_this_host("node-a:10911", 10911, mine, ""));
  EXPECT_FALSE(names_this_host("garbage", 10911, mine, "node-a"));
}

}  // namespace
}  // namespace rdma_exporter::probe
