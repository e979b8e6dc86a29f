// exporter/probe/plan/probers: which probers run, as a table of inputs and
// the probers they give, and when a prober is kept or made anew. No event
// loop, no device.

#include "exporter/probe/plan/probers.hpp"

#include <gtest/gtest.h>

#include <array>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace rdma_exporter::probe {
namespace {

// Local ports: mlx5_0/1 on rail "a", mlx5_1/2 on rail "b", each with a GID
// and a UD queue pair of its own.
std::vector<PlanPort> local_ports() {
  PlanPort a{{"mlx5_0", 1, "a"}, {}, 0x1000};
  a.gid[15] = 0x0a;
  PlanPort b{{"mlx5_1", 2, "b"}, {}, 0x2000};
  b.gid[15] = 0x0b;
  return {a, b};
}

wire::PortAd remote_port(const std::string& device, uint8_t port, const std::string& rail) {
  wire::PortAd p;
  p.device = device;
  p.port = port;
  p.rail = rail;
  return p;
}

PlanTarget target(const std::string& address, const std::string& rack) {
  PlanTarget t;
  t.address = address;
  t.name = address;
  t.target.address = address;
  if (!rack.empty()) t.target.labels = {{"rack", rack}};
  // Its ports: rxe_a/3 on rail "a", rxe_b/4 on rail "b", rxe_c/5 on "c".
  t.ports = {remote_port("rxe_a", 3, "a"), remote_port("rxe_b", 4, "b"),
             remote_port("rxe_c", 5, "c")};
  return t;
}

std::vector<ProbeClass> classes() {
  ProbeClass ud;
  ud.name = "ud64";
  ud.op = Op::ud;
  ud.size = 64;
  ProbeClass write;
  write.name = "write4k";
  write.op = Op::write;
  write.size = 4096;
  write.tclass = 106;
  write.port = 2;  // only local ports numbered 2
  return {ud, write};
}

// (target address, local device, remote device, class, scope)
using Row = std::tuple<std::string, std::string, std::string, std::string, std::string>;

std::vector<Row> rows(const PlanInputs& in) {
  std::vector<Row> out;
  for (const PlannedProber& p : plan_probers(in)) {
    out.emplace_back(in.targets[p.target].address, in.ports[p.local].port.device,
                     in.targets[p.target].ports[p.remote].device, in.classes[p.cls].name, p.scope);
  }
  return out;
}

struct Case {
  const char* name;
  std::vector<PlanTarget> targets;
  bool cross_rail;
  std::vector<Row> expected;
};

TEST(PlanProbers, Table) {
  const auto ports = local_ports();
  const auto cls = classes();
  PlanTarget same_rack = target("10.0.0.2:10911", "r1");
  PlanTarget other_rack = target("10.0.1.9:10911", "r9");
  PlanTarget picked_on_b = other_rack;
  picked_on_b.rails = {"b"};
  PlanTarget only_ud = same_rack;
  only_ud.target.classes = {"ud64"};
  PlanTarget only_rail_a = same_rack;
  only_rail_a.target.rail = "a";
  PlanTarget loopback = target("127.0.0.1:10911", "");
  loopback.name = kLoopbackTarget;
  PlanTarget no_ports = same_rack;
  no_ports.ports.clear();

  const std::vector<Case> cases = {
      {"same rail only; the write class on local port 2 alone; own rack is group",
       {same_rack},
       false,
       {{"10.0.0.2:10911", "mlx5_0", "rxe_a", "ud64", "group"},
        {"10.0.0.2:10911", "mlx5_1", "rxe_b", "ud64", "group"},
        {"10.0.0.2:10911", "mlx5_1", "rxe_b", "write4k", "group"}}},
      {"another rack is remote",
       {other_rack},
       false,
       {{"10.0.1.9:10911", "mlx5_0", "rxe_a", "ud64", "remote"},
        {"10.0.1.9:10911", "mlx5_1", "rxe_b", "ud64", "remote"},
        {"10.0.1.9:10911", "mlx5_1", "rxe_b", "write4k", "remote"}}},
      {"a host of another rack picked on rail b is probed from rail b only",
       {picked_on_b},
       false,
       {{"10.0.1.9:10911", "mlx5_1", "rxe_b", "ud64", "remote"},
        {"10.0.1.9:10911", "mlx5_1", "rxe_b", "write4k", "remote"}}},
      {"the classes a target names",
       {only_ud},
       false,
       {{"10.0.0.2:10911", "mlx5_0", "rxe_a", "ud64", "group"},
        {"10.0.0.2:10911", "mlx5_1", "rxe_b", "ud64", "group"}}},
      {"a target's own rail",
       {only_rail_a},
       false,
       {{"10.0.0.2:10911", "mlx5_0", "rxe_a", "ud64", "group"}}},
      {"cross_rail pairs every port with every port",
       {same_rack},
       true,
       {{"10.0.0.2:10911", "mlx5_0", "rxe_a", "ud64", "group"},
        {"10.0.0.2:10911", "mlx5_0", "rxe_b", "ud64", "group"},
        {"10.0.0.2:10911", "mlx5_0", "rxe_c", "ud64", "group"},
        {"10.0.0.2:10911", "mlx5_1", "rxe_a", "ud64", "group"},
        {"10.0.0.2:10911", "mlx5_1", "rxe_a", "write4k", "group"},
        {"10.0.0.2:10911", "mlx5_1", "rxe_b", "ud64", "group"},
        {"10.0.0.2:10911", "mlx5_1", "rxe_b", "write4k", "group"},
        {"10.0.0.2:10911", "mlx5_1", "rxe_c", "ud64", "group"},
        {"10.0.0.2:10911", "mlx5_1", "rxe_c", "write4k", "group"}}},
      {"the loopback target is group without a rack label",
       {loopback},
       false,
       {{"127.0.0.1:10911", "mlx5_0", "rxe_a", "ud64", "group"},
        {"127.0.0.1:10911", "mlx5_1", "rxe_b", "ud64", "group"},
        {"127.0.0.1:10911", "mlx5_1", "rxe_b", "write4k", "group"}}},
      {"a target that listed no ports yet has no prober", {no_ports}, false, {}},
      {"the same target twice is probed once",
       {only_rail_a, only_rail_a},
       false,
       {{"10.0.0.2:10911", "mlx5_0", "rxe_a", "ud64", "group"}}},
  };
  for (const Case& c : cases) {
    const PlanInputs in{ports, c.targets, cls, c.cross_rail, "rack", "r1"};
    EXPECT_EQ(rows(in), c.expected) << c.name;
  }
}

// The responder's scope of a prober: the ports the targets of this host's
// group listed (and the loopback target's), not those of other groups.
TEST(PlanProbers, GroupPortGidsAreThoseTheTargetsOfTheOwnGroupListed) {
  const auto ports = local_ports();
  const auto cls = classes();
  PlanTarget same = target("h1:1", "r1");
  same.ports[0].gid[15] = 0x11;
  same.ports[1].gid[15] = 0x12;
  same.ports[2].gid[15] = 0x13;
  PlanTarget other = target("h2:1", "r2");
  other.ports[0].gid[15] = 0x21;
  PlanTarget loopback = target("127.0.0.1:1", "");
  loopback.name = std::string(kLoopbackTarget);
  loopback.ports = {remote_port("mlx5_0", 1, "a")};
  loopback.ports[0].gid[15] = 0x0a;
  PlanTarget unlabelled = target("h3:1", "");
  unlabelled.ports[0].gid[15] = 0x31;
  const std::vector<PlanTarget> targets = {same, other, loopback, unlabelled};
  const PlanInputs in{ports, targets, cls, false, "rack", "r1"};
  EXPECT_STREQ(target_scope(same, in), "group");
  EXPECT_STREQ(target_scope(other, in), "remote");
  EXPECT_STREQ(target_scope(loopback, in), "group");
  EXPECT_STREQ(target_scope(unlabelled, in), "remote");
  std::set<std::array<uint8_t, 16>> want;
  for (uint8_t last : {0x11, 0x12, 0x13, 0x0a}) {
    std::array<uint8_t, 16> gid{};
    gid[15] = last;
    want.insert(gid);
  }
  EXPECT_EQ(group_port_gids(in), want);
}

TEST(PlanProbers, TheKeyHoldsTheSeriesLabelsAndTheLocalPortsGidAndUdQueuePair) {
  const auto ports = local_ports();
  const auto cls = classes();
  const std::vector<PlanTarget> targets = {target("10.0.0.2:10911", "r1")};
  const auto planned = plan_probers({ports, targets, cls, false, "rack", "r1"});
  ASSERT_EQ(planned.size(), 3u);
  const ProberKey& k = planned[2].key;
  EXPECT_EQ(k.address, "10.0.0.2:10911");
  EXPECT_EQ(k.class_name, "write4k");
  EXPECT_EQ(k.labels, (Labels{{"target", "10.0.0.2:10911"},
                              {"device", "mlx5_1"},
                              {"port", "2"},
                              {"remote_device", "rxe_b"},
                              {"remote_port", "4"},
                              {"rail", "b"},
                              {"op", "write"},
                              {"size", "4096"},
                              {"tclass", "106"},
                              {"rack", "r1"}}));
  EXPECT_EQ(k.gid[15], 0x0b);
  EXPECT_EQ(k.ud_instance, 0x2000u);

  // The same inputs give the same keys: every prober is kept.
  const auto again = plan_probers({ports, targets, cls, false, "rack", "r1"});
  ASSERT_EQ(again.size(), planned.size());
  for (std::size_t i = 0; i < again.size(); ++i) EXPECT_EQ(again[i].key, planned[i].key);

  // A new GID on mlx5_0, a new UD queue pair on mlx5_1: every key changes.
  auto changed = ports;
  changed[0].gid[15] = 0x0c;
  changed[1].ud_instance = 0x3000;
  const auto moved = plan_probers({changed, targets, cls, false, "rack", "r1"});
  ASSERT_EQ(moved.size(), planned.size());
  for (std::size_t i = 0; i < moved.size(); ++i) EXPECT_NE(moved[i].key, planned[i].key) << i;
}

}  // namespace
}  // namespace rdma_exporter::probe
