// Rails: the subnet of a port's GID, the rail a port is on, and which pairs
// of a local and a target's port are probed. Every expected value below is
// worked out by hand.

#include "exporter/probe/plan/rails.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace rdma_exporter::probe {
namespace {

using Gid = std::array<uint8_t, 16>;
using Pairs = std::vector<std::pair<std::size_t, std::size_t>>;

// An IPv6 address (or GID) from its text.
Gid v6(const char* text) {
  Gid g{};
  EXPECT_EQ(::inet_pton(AF_INET6, text, g.data()), 1) << text;
  return g;
}

// An IPv4 address as an IPv4-mapped IPv6 address (a RoCEv2 IPv4 GID).
Gid v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d};
}

InterfaceAddress addr4(Gid address, int prefix) {
  return {address, prefix, true};
}

InterfaceAddress addr6(const char* text, int prefix) {
  return {v6(text), prefix, false};
}

struct SubnetCase {
  const char* what;
  Gid gid;
  bool ethernet;
  std::vector<InterfaceAddress> addresses;
  std::string want;
};

TEST(ProbeRails, GidSubnetOfEveryKindOfPort) {
  const std::vector<SubnetCase> cases = {
      // RoCEv2, IPv4: the subnet of the interface address equal to the GID.
      {"IPv4 /24",
       v4(192, 168, 100, 7),
       true,
       {addr4(v4(10, 0, 0, 1), 8), addr4(v4(192, 168, 100, 7), 24)},
       "192.168.100.0/24"},
      {"IPv4 /20 cuts inside a byte: 35 = 0010 0011 -> 0010 0000 = 32",
       v4(172, 16, 35, 9),
       true,
       {addr4(v4(172, 16, 35, 9), 20)},
       "172.16.32.0/20"},
      {"IPv4 /25: 200 = 1100 1000 -> 1000 0000 = 128",
       v4(10, 9, 8, 200),
       true,
       {addr4(v4(10, 9, 8, 200), 25)},
       "10.9.8.128/25"},
      {"IPv4 /32", v4(10, 1, 2, 3), true, {addr4(v4(10, 1, 2, 3), 32)}, "10.1.2.3/32"},
      {"IPv4 /0", v4(10, 1, 2, 3), true, {addr4(v4(10, 1, 2, 3), 0)}, "0.0.0.0/0"},
      // No interface has the GID's address (a neighbour in its subnet does
      // not count): the address alone.
      {"IPv4, no interface has it",
       v4(192, 168, 100, 7),
       true,
       {addr4(v4(192, 168, 100, 8), 24), addr6("fd00:1::5", 64)},
       "192.168.100.7/32"},
      {"IPv4, no addresses", v4(192, 168, 100, 7), true, {}, "192.168.100.7/32"},
      // RoCEv2, IPv6: the IPv6 subnet of the matching address.
      {"IPv6 /64",
       v6("fd00:1::5"),
       true,
       {addr4(v4(192, 168, 100, 7), 24), addr6("fd00:1::5", 64)},
       "fd00:1::/64"},
      {"IPv6 /56: the low byte of 00bb goes",
       v6("2001:db8:aa:bb::17"),
       true,
       {addr6("2001:db8:aa:bb::17", 56)},
       "2001:db8:aa::/56"},
      {"IPv6 /100: 9abc -> 9000",
       v6("2001:db8::1234:5678:9abc:def0"),
       true,
       {addr6("2001:db8::1234:5678:9abc:def0", 100)},
       "2001:db8::1234:5678:9000:0/100"},
      {"IPv6, no interface has it",
       v6("fd00:1::5"),
       true,
       {addr6("fd00:1::6", 64)},
       "fd00:1::5/128"},
      // RoCE with a link-local GID (RoCEv1 or the default GID 0).
      {"link-local RoCE GID",
       v6("fe80::202:c9ff:fe00:1"),
       true,
       {addr6("fe80::202:c9ff:fe00:1", 64)},
       "fe80::/64"},
      // InfiniBand: the GID's subnet prefix, whatever the interfaces have.
      {"InfiniBand, default subnet prefix", v6("fe80::2:c903:12:3456"), false, {}, "fe80::/64"},
      {"InfiniBand, own subnet prefix",
       v6("fec0:0:0:1:2:c903:12:3456"),
       false,
       {addr6("fec0:0:0:1:2:c903:12:3456", 48)},
       "fec0:0:0:1::/64"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(gid_subnet(c.gid, c.ethernet, c.addresses), c.want) << c.what;
  }
}

TEST(ProbeRails, InterfaceAddressesIncludeTheLoopbackAddress) {
  // 127.0.0.1/8 on lo, as an IPv4-mapped address with its IPv4 prefix.
  const auto addresses = interface_addresses();
  const bool found = std::any_of(addresses.begin(), addresses.end(), [](const auto& a) {
    return a.ipv4 && a.address == v4(127, 0, 0, 1) && a.prefix == 8;
  });
  EXPECT_TRUE(found);
  EXPECT_EQ(gid_subnet(v4(127, 0, 0, 1), true, addresses), "127.0.0.0/8");
}

TEST(ProbeRails, ConfiguredRailsWinDevicePortFirst) {
  const std::map<std::string, std::string> rails = {
      {"mlx5_0/1", "rail-0a"}, {"mlx5_0", "rail-0"}, {"mlx5_1/2", "rail-1b"}};
  // "device/port" over "device" over the subnet.
  EXPECT_EQ(rail_of("mlx5_0", 1, "10.0.0.0/24", rails), "rail-0a");
  EXPECT_EQ(rail_of("mlx5_0", 2, "10.0.0.0/24", rails), "rail-0");
  EXPECT_EQ(rail_of("mlx5_1", 2, "10.1.0.0/24", rails), "rail-1b");
  // mlx5_1 has only port 2 named; "mlx5_10" is not "mlx5_1".
  EXPECT_EQ(rail_of("mlx5_1", 1, "10.1.0.0/24", rails), "10.1.0.0/24");
  EXPECT_EQ(rail_of("mlx5_10", 2, "10.10.0.0/24", rails), "10.10.0.0/24");
  EXPECT_EQ(rail_of("mlx5_2", 1, "fe80::/64", {}), "fe80::/64");
}

wire::PortAd rail_port(const std::string& device, uint8_t port, const std::string& rail) {
  wire::PortAd p;
  p.device = device;
  p.port = port;
  p.rail = rail;
  return p;
}

TEST(ProbeRails, PairsAreSameRailUnlessCrossRail) {
  const std::vector<RailPort> local = {{"mlx5_0", 1, "r1"}, {"mlx5_1", 1, "r2"}};
  const std::vector<wire::PortAd> remote = {
      rail_port("mlx5_4", 1, "r2"),
      rail_port("mlx5_5", 1, "r1"),
      rail_port("mlx5_5", 2, "r1"),
  };
  // Same rail: local 0 (r1) with remote 1 and 2, local 1 (r2) with remote 0.
  EXPECT_EQ(rail_pairs(local, remote, false, ""), (Pairs{{0, 1}, {0, 2}, {1, 0}}));
  // Cross rail: everything, local then remote order.
  EXPECT_EQ(rail_pairs(local, remote, true, ""),
            (Pairs{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}}));
  // A target's own rail keeps its ports on that rail alone.
  EXPECT_EQ(rail_pairs(local, remote, false, "r1"), (Pairs{{0, 1}, {0, 2}}));
  EXPECT_EQ(rail_pairs(local, remote, false, "r2"), (Pairs{{1, 0}}));
  EXPECT_EQ(rail_pairs(local, remote, true, "r1"), (Pairs{{0, 1}, {0, 2}, {1, 1}, {1, 2}}));
  EXPECT_EQ(rail_pairs(local, remote, true, "r3"), Pairs{});
  EXPECT_EQ(rail_pairs(local, remote, false, "r3"), Pairs{});
  // Nothing to pair with.
  EXPECT_EQ(rail_pairs({}, remote, true, ""), Pairs{});
  EXPECT_EQ(rail_pairs(local, {}, true, ""), Pairs{});
  // No rail in common.
  EXPECT_EQ(rail_pairs({{"mlx5_0", 1, "r9"}}, remote, false, ""), Pairs{});
}

}  // namespace
}  // namespace rdma_exporter::probe
