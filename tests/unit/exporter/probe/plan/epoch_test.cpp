// exporter/probe/plan/epoch: the targets wanted (one per address, the
// first listed) and this epoch's picks, without an event loop.

#include "exporter/probe/plan/epoch.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace rdma_exporter::probe {
namespace {

Target t(const std::string& address, const std::string& rack, const std::string& rail = "") {
  Target out;
  out.address = address;
  if (!rack.empty()) out.labels = {{"rack", rack}};
  out.rail = rail;
  return out;
}

TEST(PlanWantedTargets, FirstPerAddressStaticBeforeFileSdWithSourcesAndConflicts) {
  const std::vector<Target> statics = {t("10.0.0.1:10911", "r1"), t("10.0.0.2:10911", "r2", "a")};
  const std::vector<Target> files = {t("10.0.0.2:10911", "r9"), t("10.0.0.3:10911", "r3"),
                                     t("10.0.0.3:10911", "r3")};
  WantedTargets w = wanted_targets(statics, files);
  std::vector<WatchKey> keys;
  for (const auto& [k, v] : w.targets) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<WatchKey>{
                      {"10.0.0.1:10911", {{"target", "10.0.0.1:10911"}, {"rack", "r1"}}, ""},
                      {"10.0.0.2:10911", {{"target", "10.0.0.2:10911"}, {"rack", "r2"}}, "a"},
                      {"10.0.0.3:10911", {{"target", "10.0.0.3:10911"}, {"rack", "r3"}}, ""}}));
  EXPECT_EQ(w.targets.begin()->second.name, "10.0.0.1:10911");
  EXPECT_EQ(w.by_source, (std::map<std::string, int>{{"static", 2}, {"file_sd", 1}}));
  // The same entry twice is no conflict; other labels are.
  EXPECT_EQ(w.conflicting, (std::set<std::string>{"10.0.0.2:10911"}));

  w.add("loopback", "loopback", t("127.0.0.1:10911", ""));
  EXPECT_EQ(w.by_source.at("loopback"), 1);
  EXPECT_EQ(w.targets.size(), 4u);
}

// Six hosts in three racks; this host is h1 of rack r1.
WantedTargets fleet() {
  return wanted_targets({t("h1:10911", "r1"), t("h2:10911", "r1"), t("h3:10911", "r2"),
                         t("h4:10911", "r2"), t("h5:10911", "r3"), t("h6:10911", "r3")},
                        {});
}

TEST(PlanEpochPick, ThisHostFoundByNameProbesItsRackAndOneOtherHostPerRail) {
  PinglistOptions o;
  o.remote_per_rail = 1;
  o.group = "ignored when listed";
  const EpochPick pick = pick_epoch(fleet(), ThisHost{{}, "h1", 10911}, {"b", "a", "a"}, o, 42);
  EXPECT_TRUE(pick.report.self_listed);
  EXPECT_EQ(pick.report.group, "r1");
  EXPECT_EQ(pick.report.address, "h1:10911");  // its entry in the list
  EXPECT_EQ(pick.report.epoch, 42u);
  EXPECT_EQ(pick.report.group_hosts, 1u);
  EXPECT_EQ(pick.report.fleet_hosts, 6u);
  EXPECT_FALSE(pick.chosen.contains("h1:10911"));  // not itself
  ASSERT_TRUE(pick.chosen.contains("h2:10911"));
  EXPECT_TRUE(pick.chosen.at("h2:10911").empty());  // its rack: every rail
  // One host of another rack per local rail (a and b, each once).
  std::multiset<std::string> rails;
  std::set<std::string> remote;
  for (const auto& [address, on] : pick.chosen) {
    if (address == "h2:10911") continue;
    EXPECT_TRUE(address != "h1:10911" && address != "h2:10911") << address;
    rails.insert(on.begin(), on.end());
    remote.insert(address);
  }
  EXPECT_EQ(rails, (std::multiset<std::string>{"a", "b"}));
  EXPECT_EQ(pick.report.remote_hosts, remote.size());
  EXPECT_GE(remote.size(), 1u);
  EXPECT_LE(remote.size(), 2u);
}

TEST(PlanEpochPick, AnUnlistedHostTakesTheConfiguredGroupAndNoRailsMeansOneEmptyRail) {
  PinglistOptions o;
  o.remote_per_rail = 1;
  o.group = "r2";
  const EpochPick pick = pick_epoch(fleet(), ThisHost{{}, "elsewhere", 10911}, {}, o, 7);
  EXPECT_FALSE(pick.report.self_listed);
  EXPECT_EQ(pick.report.group, "r2");
  EXPECT_EQ(pick.report.address, "elsewhere:10911");  // host name and probe port
  EXPECT_EQ(pick.report.group_hosts, 2u);             // h3 and h4
  EXPECT_TRUE(pick.chosen.at("h3:10911").empty());
  EXPECT_TRUE(pick.chosen.at("h4:10911").empty());
  std::size_t on_no_rail = 0;
  for (const auto& [address, on] : pick.chosen) {
    if (on.contains("")) ++on_no_rail;
  }
  EXPECT_EQ(on_no_rail, 1u);
  EXPECT_EQ(pick.chosen.size(), 3u);
}

TEST(PlanEpochPick, ThisHostFoundByAddressOnItsPortOnly) {
  InterfaceAddress lo;
  lo.address[10] = 0xff;
  lo.address[11] = 0xff;
  lo.address[12] = 10;
  lo.address[15] = 5;  // 10.0.0.5
  lo.prefix = 24;
  const WantedTargets w =
      wanted_targets({t("10.0.0.5:10911", "r7"), t("10.0.0.6:10911", "r7")}, {});
  PinglistOptions o;
  EXPECT_EQ(pick_epoch(w, ThisHost{{lo}, "", 10911}, {"a"}, o, 1).report.group, "r7");
  // Another port on the same address is another exporter.
  const EpochPick other = pick_epoch(w, ThisHost{{lo}, "", 10912}, {"a"}, o, 1);
  EXPECT_FALSE(other.report.self_listed);
}

}  // namespace
}  // namespace rdma_exporter::probe
