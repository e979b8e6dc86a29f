// exporter/probe/local_ports/ports: which ports of the open devices the probe
// uses and what each port reports, as a table, without a device.

#include "exporter/probe/local_ports/ports.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace rdma_exporter::probe {
namespace {

PortInfo info(uint8_t port, bool ethernet, uint8_t gid_last, int gid_index) {
  PortInfo i;
  i.port = port;
  i.ethernet = ethernet;
  i.gid[15] = gid_last;
  i.gid_index = gid_index;
  i.lid = static_cast<uint16_t>(0x100 + gid_last);
  i.active_mtu = 4096;
  return i;
}

// mlx5_0: port 1 RoCE, active, GID ..0a; port 2 RoCE, not active, no GID.
// mlx5_1: port 1 InfiniBand, active, GID ..1b; port 2 RoCE, active, no GID.
struct Bed {
  std::set<uint8_t> used0;
  std::set<uint8_t> used1;
  std::vector<DeviceView> views() {
    return {{"mlx5_0",
             {{1, true, true, info(1, true, 0x0a, 3)}, {2, true, false, std::nullopt}},
             &used0},
            {"mlx5_1",
             {{1, false, true, info(1, false, 0x1b, 0)}, {2, true, true, std::nullopt}},
             &used1}};
  }
};

PortFilter rails_only() {
  PortFilter f;
  f.rails = {{"mlx5_0/1", "rail-a"}, {"mlx5_1", "rail-b"}};
  return f;
}

std::vector<std::string> chosen(const PortSelection& s) {
  std::vector<std::string> out;
  for (const auto& p : s.ports) {
    out.push_back(p.device + "/" + std::to_string(p.info.port) + " " + p.rail + " gid " +
                  std::to_string(p.info.gid[15]));
  }
  return out;
}

TEST(DevicePorts, ActivePortsWithAGidAreUsedAndEveryPortReportsItsState) {
  Bed bed;
  auto views = bed.views();
  const PortSelection s = select_ports(views, rails_only(), {}, {});
  EXPECT_EQ(chosen(s),
            (std::vector<std::string>{"mlx5_0/1 rail-a gid 10", "mlx5_1/1 rail-b gid 27"}));
  EXPECT_EQ(s.reports, (std::vector<PortReport>{{"mlx5_0", 1, "probing", "rail-a"},
                                                {"mlx5_0", 2, "inactive", ""},
                                                {"mlx5_1", 1, "probing", "rail-b"},
                                                {"mlx5_1", 2, "no_gid", ""}}));
  EXPECT_EQ(bed.used0, (std::set<uint8_t>{1}));
  EXPECT_EQ(bed.used1, (std::set<uint8_t>{1}));
  EXPECT_EQ(s.ports[0].info.lid, 0x10a);
  EXPECT_EQ(s.ports[0].info.gid_index, 3);
}

TEST(DevicePorts, PortAndLinkLayerFiltersExcludeAndForget) {
  Bed bed;
  bed.used0 = {1};
  bed.used1 = {1};
  PortFilter by_number = rails_only();
  by_number.port = 2;
  auto views = bed.views();
  PortSelection s = select_ports(views, by_number, {}, {});
  EXPECT_TRUE(s.ports.empty());
  EXPECT_EQ(s.reports, (std::vector<PortReport>{{"mlx5_0", 1, "excluded", ""},
                                                {"mlx5_0", 2, "inactive", ""},
                                                {"mlx5_1", 1, "excluded", ""},
                                                {"mlx5_1", 2, "no_gid", ""}}));
  EXPECT_TRUE(bed.used0.empty());  // excluded ports are forgotten
  EXPECT_TRUE(bed.used1.empty());

  PortFilter infiniband = rails_only();
  infiniband.link_layer = "infiniband";
  views = bed.views();
  s = select_ports(views, infiniband, {}, {});
  EXPECT_EQ(chosen(s), (std::vector<std::string>{"mlx5_1/1 rail-b gid 27"}));
  EXPECT_EQ(s.reports[0].state, "excluded");
  EXPECT_EQ(s.reports[1].state, "excluded");
  EXPECT_EQ(s.reports[3].state, "excluded");
}

TEST(DevicePorts, APortInUseThatGoesDownOrLosesItsGidKeepsProbing) {
  Bed bed;
  bed.used0 = {1, 2};  // mlx5_0/2 was in use: now down, without a GID
  auto views = bed.views();
  views[0].ports[0].active = false;  // mlx5_0/1 down, GID still there
  // What mlx5_0/2 had: GID ..2c on rail-x.
  const std::vector<ChosenPort> previous = {{"mlx5_0", info(2, true, 0x2c, 1), "rail-x"}};
  const PortSelection s = select_ports(views, rails_only(), {}, previous);
  EXPECT_EQ(chosen(s), (std::vector<std::string>{"mlx5_0/1 rail-a gid 10", "mlx5_0/2 rail-x gid 44",
                                                 "mlx5_1/1 rail-b gid 27"}));
  EXPECT_EQ(s.reports[0], (PortReport{"mlx5_0", 1, "down", "rail-a"}));
  EXPECT_EQ(s.reports[1], (PortReport{"mlx5_0", 2, "down", "rail-x"}));

  // In use, active, no GID and nothing of its own to keep (mlx5_0/2's
  // is another device's): not used, no_gid.
  Bed again;
  again.used1 = {2};
  auto v2 = again.views();
  const PortSelection none = select_ports(v2, rails_only(), {}, previous);
  EXPECT_EQ(none.reports[3], (PortReport{"mlx5_1", 2, "no_gid", ""}));
  EXPECT_EQ(chosen(none).size(), 2u);
}

}  // namespace
}  // namespace rdma_exporter::probe
