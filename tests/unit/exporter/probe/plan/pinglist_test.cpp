// Pinglists: which hosts a host probes in an epoch, computed by every host
// alone from the same target list. Every expected value below is worked out
// by hand from the construction described in pinglist.hpp; the hashes that
// pick a host inside a group were evaluated once from their definition.

#include "exporter/probe/plan/pinglist.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace rdma_exporter::probe {
namespace {

using Ids = std::vector<std::string>;

// Two rails. stable_hash("192.168.100.0/24") = 0x0348fe28173ccd75: odd,
// 0 mod 3, 7 mod 19; stable_hash("192.168.101.0/24") = 0xaf1716b216a9096e:
// even, 0 mod 3, 10 mod 19.
const std::string kRail0 = "192.168.100.0/24";
const std::string kRail1 = "192.168.101.0/24";
const std::vector<std::string> kRails = {kRail0, kRail1};

std::string host(int rack, int index) {
  return "10.0." + std::to_string(rack) + "." + std::to_string(index) + ":9879";
}

// `racks` racks "r1"... of `size` hosts 10.0.<rack>.<index>:9879 each.
std::vector<FleetMember> fleet(int racks, int size) {
  std::vector<FleetMember> members;
  for (int r = 1; r <= racks; ++r) {
    for (int h = 1; h <= size; ++h) members.push_back({host(r, h), "r" + std::to_string(r)});
  }
  return members;
}

Ids ids(const std::vector<FleetMember>& members, const std::vector<std::size_t>& indices) {
  Ids out;
  for (const std::size_t i : indices) out.push_back(members.at(i).id);
  return out;
}

Pinglist plan(const std::vector<FleetMember>& members, const std::string& self, std::size_t k,
              uint64_t epoch, const std::string& self_group = "",
              const std::vector<std::string>& rails = kRails) {
  return compute_pinglist(members, self, self_group, rails, {k, epoch});
}

// The rack ("r2") of a host 10.0.2.x:9879.
std::string rack_of(const std::string& id) {
  return "r" + id.substr(5, id.find('.', 5) - 5);
}

TEST(PinglistSettings, DefaultKIsTheConfigurationsAsDocumented) {
  // docs/configuration.md: probe.pinglist.remote_per_rail defaults to 4.
  EXPECT_EQ(PinglistOptions{}.remote_per_rail, 4u);
  EXPECT_EQ(PinglistSettings{}.remote_per_rail, 4u);
}

TEST(PinglistHash, PinsTheDefinition) {
  // FNV-1a of "" is the offset basis 0xcbf29ce484222325, of "a"
  // 0xaf63dc4c8601ec8c; then the splitmix64 finalizer.
  EXPECT_EQ(stable_hash(""), 0xf52a15e9a9b5e89bULL);
  EXPECT_EQ(stable_hash("a"), 0x02c0bdbf481420f8ULL);
  // The seed is XORed into the offset basis.
  EXPECT_EQ(stable_hash("a", 1), 0x270aeb36a95726cfULL);
  EXPECT_EQ(stable_hash(kRail0), 0x0348fe28173ccd75ULL);
  EXPECT_EQ(stable_hash(kRail1), 0xaf1716b216a9096eULL);
  EXPECT_EQ(stable_hash("10.0.1.1:9879", 42), 0x18ee1a7032123b46ULL);
  // Bytes above 0x7f count as unsigned (0xff, not -1).
  EXPECT_EQ(stable_hash("\xff"), 0x4f2db50f124040cdULL);
}

TEST(PinglistEpoch, IsUnixTimeOverTheLength) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  const std::chrono::system_clock::time_point epoch0{};
  EXPECT_EQ(pinglist_epoch(epoch0 + seconds(1'800'000'000), seconds(60)), 30'000'000u);
  EXPECT_EQ(pinglist_epoch(epoch0 + milliseconds(59'999), seconds(60)), 0u);
  EXPECT_EQ(pinglist_epoch(epoch0 + seconds(60), seconds(60)), 1u);
  EXPECT_EQ(pinglist_epoch(epoch0 + milliseconds(2'500), milliseconds(500)), 5u);
  EXPECT_EQ(pinglist_epoch(epoch0 - seconds(60), seconds(60)), 0u);
  EXPECT_EQ(pinglist_epoch(epoch0 + seconds(600), milliseconds(0)), 0u);
}

// 3 racks × 2 hosts, k = 1: M = 3 groups, S = 2, Q = 2 slots per rail,
// M − 1 = 2 offsets. Slot q = p, moved to q_e = (p + e) mod 2; offset
// o = (q_e + 2e + h(rail)) mod 2 = (p + e + h) mod 2; target rack index
// (a + 1 + o) mod 3.
TEST(Pinglist, ThreeRacksOfTwoRotateEveryEpoch) {
  const auto members = fleet(3, 2);
  struct Expected {
    int rack, index;       // the host
    const char* rail0[3];  // its rack hit on kRail0 (h odd) in epochs 0, 1, 2
    const char* rail1[3];  // on kRail1 (h even)
  };
  const Expected table[] = {
      // a = 0, p = 0: o = (1 + e) mod 2 on rail 0, e mod 2 on rail 1.
      {1, 1, {"r3", "r2", "r3"}, {"r2", "r3", "r2"}},
      // a = 0, p = 1.
      {1, 2, {"r2", "r3", "r2"}, {"r3", "r2", "r3"}},
      // a = 1: o = 0 is r3, o = 1 is r1.
      {2, 1, {"r1", "r3", "r1"}, {"r3", "r1", "r3"}},
      {2, 2, {"r3", "r1", "r3"}, {"r1", "r3", "r1"}},
      // a = 2: o = 0 is r1, o = 1 is r2.
      {3, 1, {"r2", "r1", "r2"}, {"r1", "r2", "r1"}},
      {3, 2, {"r1", "r2", "r1"}, {"r2", "r1", "r2"}},
  };
  for (const Expected& e : table) {
    for (uint64_t epoch = 0; epoch < 3; ++epoch) {
      const auto self = host(e.rack, e.index);
      const Pinglist list = plan(members, self, 1, epoch);
      SCOPED_TRACE(self + " epoch " + std::to_string(epoch));
      EXPECT_EQ(ids(members, list.group), (Ids{host(e.rack, 3 - e.index)}));
      ASSERT_EQ(list.remote.size(), 2u);
      const Ids on0 = ids(members, list.remote.at(kRail0));
      const Ids on1 = ids(members, list.remote.at(kRail1));
      ASSERT_EQ(on0.size(), 1u);
      ASSERT_EQ(on1.size(), 1u);
      EXPECT_EQ(rack_of(on0[0]), e.rail0[epoch]);
      EXPECT_EQ(rack_of(on1[0]), e.rail1[epoch]);
    }
  }
  // The host inside the rack: the rendezvous winner of (epoch, self, rail,
  // slot), different from epoch to epoch.
  const Ids want0[3] = {{host(3, 1)}, {host(2, 2)}, {host(3, 2)}};
  const Ids want1[3] = {{host(2, 1)}, {host(3, 2)}, {host(2, 1)}};
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    const Pinglist list = plan(members, host(1, 1), 1, epoch);
    EXPECT_EQ(ids(members, list.remote.at(kRail0)), want0[epoch]) << epoch;
    EXPECT_EQ(ids(members, list.remote.at(kRail1)), want1[epoch]) << epoch;
  }
}

// 4 racks × 2 hosts, k = 1, epoch 2^63: M − 1 = 3, Q = 2. e·Q = 2^64 does
// not fit in 64 bits; 2^64 mod 3 = 1. h(kRail0) mod 3 = 0, e·k mod Q = 0, so
// o = (1 + p) mod 3: host p = 0 probes rack index 2 (r3), p = 1 rack 3 (r4).
TEST(Pinglist, EpochTimesSlotsBeyond64Bits) {
  const auto members = fleet(4, 2);
  const uint64_t epoch = uint64_t{1} << 63;
  const std::vector<std::string> rails = {kRail0};
  EXPECT_EQ(ids(members, plan(members, host(1, 1), 1, epoch, "", rails).remote.at(kRail0)),
            (Ids{host(3, 1)}));
  EXPECT_EQ(ids(members, plan(members, host(1, 2), 1, epoch, "", rails).remote.at(kRail0)),
            (Ids{host(4, 2)}));
}

TEST(Pinglist, FullMeshInsideTheRackSortedById) {
  // Listed out of order. Ids compare byte by byte: "10.0.1.10:9879" sorts
  // before "10.0.1.1:9879" ('0' is 0x30, ':' 0x3a).
  const std::vector<FleetMember> members = {
      {"10.0.1.3:9879", "r1"},  {"10.0.2.1:9879", "r2"}, {"10.0.1.2:9879", "r1"},
      {"10.0.1.10:9879", "r1"}, {"10.0.1.1:9879", "r1"},
  };
  const Pinglist list = plan(members, "10.0.1.2:9879", 2, 0);
  EXPECT_EQ(ids(members, list.group), (Ids{"10.0.1.10:9879", "10.0.1.1:9879", "10.0.1.3:9879"}));
  EXPECT_EQ(list.group, (std::vector<std::size_t>{3, 4, 0}));
  // One host elsewhere, k = 2: it, on both rails.
  EXPECT_EQ(list.remote.at(kRail0), (std::vector<std::size_t>{1}));
  EXPECT_EQ(list.remote.at(kRail1), (std::vector<std::size_t>{1}));
}

TEST(Pinglist, InputOrderDoesNotMatter) {
  const auto members = fleet(20, 4);
  auto shuffled = members;
  std::mt19937 random(7);
  std::shuffle(shuffled.begin(), shuffled.end(), random);
  ASSERT_NE(ids(members, {0, 1, 2}), ids(shuffled, {0, 1, 2}));
  for (const auto& self : {host(1, 1), host(7, 3), host(20, 4)}) {
    for (uint64_t epoch : {0u, 1u, 5u}) {
      const Pinglist a = plan(members, self, 2, epoch);
      const Pinglist b = plan(shuffled, self, 2, epoch);
      EXPECT_EQ(ids(members, a.group), ids(shuffled, b.group));
      for (const auto& rail : kRails) {
        EXPECT_EQ(ids(members, a.remote.at(rail)), ids(shuffled, b.remote.at(rail)))
            << self << " " << epoch << " " << rail;
        EXPECT_EQ(a.remote.at(rail).size(), 2u);
      }
    }
  }
}

TEST(Pinglist, WithoutLabelsEveryoneProbesEveryone) {
  const std::vector<FleetMember> members = {
      {"10.0.0.3:9879", ""}, {"10.0.0.1:9879", ""}, {"10.0.0.2:9879", ""}, {"10.0.0.4:9879", ""}};
  const Pinglist list = plan(members, "10.0.0.2:9879", 2, 3);
  EXPECT_EQ(ids(members, list.group), (Ids{"10.0.0.1:9879", "10.0.0.3:9879", "10.0.0.4:9879"}));
  EXPECT_EQ(list.remote.size(), 2u);
  EXPECT_TRUE(list.remote.at(kRail0).empty());
  EXPECT_TRUE(list.remote.at(kRail1).empty());
}

TEST(Pinglist, UnlabelledHostsAreAGroupOfTheirOwn) {
  // "" sorts first: groups "", "r1"; the "" host probes r1 and is probed by it.
  const std::vector<FleetMember> members = {
      {"10.0.1.1:9879", "r1"}, {"10.0.0.1:9879", ""}, {"10.0.1.2:9879", "r1"}};
  const Pinglist bare = plan(members, "10.0.0.1:9879", 5, 0);
  EXPECT_TRUE(bare.group.empty());
  EXPECT_EQ(ids(members, bare.remote.at(kRail0)), (Ids{"10.0.1.1:9879", "10.0.1.2:9879"}));
  const Pinglist racked = plan(members, "10.0.1.2:9879", 5, 0);
  EXPECT_EQ(ids(members, racked.group), (Ids{"10.0.1.1:9879"}));
  EXPECT_EQ(ids(members, racked.remote.at(kRail1)), (Ids{"10.0.0.1:9879"}));
}

// Self 10.0.9.9:9879 is not listed. stable_hash of it is
// 0x13a1181450bb5c59, 0 mod 3.
TEST(Pinglist, SelfAbsentFromTheList) {
  const auto members = fleet(3, 2);
  const std::string self = "10.0.9.9:9879";
  // In r1: S = 3 counting self, p = 0, Q = 3, M − 1 = 2. q_e = e mod 3,
  // o = (3e + h + q_e) mod 2: on kRail0 (h odd) 1, 1, 1 (rack r3) for
  // epochs 0, 1, 2; on kRail1 (h even) 0, 0, 0 (rack r2).
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    const Pinglist list = plan(members, self, 1, epoch, "r1");
    EXPECT_EQ(ids(members, list.group), (Ids{host(1, 1), host(1, 2)}));
    const Ids on0 = ids(members, list.remote.at(kRail0));
    const Ids on1 = ids(members, list.remote.at(kRail1));
    ASSERT_EQ(on0.size(), 1u);
    ASSERT_EQ(on1.size(), 1u);
    EXPECT_EQ(rack_of(on0[0]), "r3") << epoch;
    EXPECT_EQ(rack_of(on1[0]), "r2") << epoch;
  }
  // In a group nobody else is in, "r0": groups r0, r1, r2, r3, a = 0, S = 1,
  // p = 0, Q = 1, M − 1 = 3: o = (e + h) mod 3 = e mod 3 on both rails,
  // rack r1, r2, r3 in epochs 0, 1, 2.
  const char* racks[3] = {"r1", "r2", "r3"};
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    const Pinglist list = plan(members, self, 1, epoch, "r0");
    EXPECT_TRUE(list.group.empty());
    for (const auto& rail : kRails) {
      const Ids on = ids(members, list.remote.at(rail));
      ASSERT_EQ(on.size(), 1u);
      EXPECT_EQ(rack_of(on[0]), racks[epoch]) << epoch << " " << rail;
    }
  }
}

TEST(Pinglist, SelfListedIgnoresSelfGroup) {
  const auto members = fleet(3, 2);
  const Pinglist list = plan(members, host(2, 1), 1, 0, "r3");
  EXPECT_EQ(ids(members, list.group), (Ids{host(2, 2)}));
}

TEST(Pinglist, DuplicatedIdsAreOneHostWithTheFirstGroup) {
  const std::vector<FleetMember> members = {
      {"10.0.1.1:9879", "r1"}, {"10.0.2.1:9879", "r2"},
      {"10.0.1.2:9879", "r1"}, {"10.0.1.1:9879", "r2"},  // again, other group: still r1, index 0
      {"10.0.2.1:9879", "r1"},                           // self again
      {"10.0.1.2:9879", "r1"},
  };
  const Pinglist list = plan(members, "10.0.2.1:9879", 5, 0);
  EXPECT_TRUE(list.group.empty());
  EXPECT_EQ(list.remote.at(kRail0), (std::vector<std::size_t>{0, 2}));
  EXPECT_EQ(list.remote.at(kRail1), (std::vector<std::size_t>{0, 2}));
  const Pinglist other = plan(members, "10.0.1.2:9879", 5, 0);
  EXPECT_EQ(other.group, (std::vector<std::size_t>{0}));
  EXPECT_EQ(other.remote.at(kRail0), (std::vector<std::size_t>{1}));
}

TEST(Pinglist, KLargerThanTheRestProbesAllOfIt) {
  const auto members = fleet(3, 2);
  const Pinglist list = plan(members, host(1, 1), 10, 4);
  for (const auto& rail : kRails) {
    EXPECT_EQ(ids(members, list.remote.at(rail)),
              (Ids{host(2, 1), host(2, 2), host(3, 1), host(3, 2)}));
  }
  // k = 0: the rack only.
  const Pinglist none = plan(members, host(1, 1), 0, 4);
  EXPECT_TRUE(none.remote.at(kRail0).empty());
}

TEST(Pinglist, OneEntryPerRail) {
  const auto members = fleet(3, 2);
  const std::vector<std::string> rails = {kRail1, kRail0, kRail1};
  const Pinglist list = plan(members, host(1, 1), 1, 0, "", rails);
  EXPECT_EQ(list.remote.size(), 2u);
  EXPECT_EQ(list.remote, plan(members, host(1, 1), 1, 0).remote);
  EXPECT_TRUE(plan(members, host(1, 1), 1, 0, "", {}).remote.empty());
}

// k = 3 with 4 hosts elsewhere: slots hit a rack more than once. 3 racks × 2,
// host p = 0 of r1: Q = 6, q_e = j + 3e, o = q_e mod 2 on kRail1 (h even):
// epoch 0 racks r2, r3, r2; epoch 1 r3, r2, r3.
TEST(Pinglist, SlotsOnTheSameRackPickDistinctHosts) {
  const auto members = fleet(3, 2);
  const Pinglist first = plan(members, host(1, 1), 3, 0);
  EXPECT_EQ(ids(members, first.remote.at(kRail1)), (Ids{host(2, 1), host(2, 2), host(3, 2)}));
  const Pinglist second = plan(members, host(1, 1), 3, 1);
  EXPECT_EQ(ids(members, second.remote.at(kRail1)), (Ids{host(2, 2), host(3, 1), host(3, 2)}));
  // r2 has one host only: its second slot (o = 0 again) moves on to r3.
  const std::vector<FleetMember> uneven = {{host(1, 1), "r1"},
                                           {host(2, 1), "r2"},
                                           {host(3, 1), "r3"},
                                           {host(3, 2), "r3"},
                                           {host(3, 3), "r3"}};
  const Pinglist list = plan(uneven, host(1, 1), 3, 0);
  EXPECT_EQ(ids(uneven, list.remote.at(kRail1)), (Ids{host(2, 1), host(3, 2), host(3, 3)}));
}

// 20 racks × 4 hosts × 2 rails, k = 1: M − 1 = 19 offsets, Q = 4 per rack,
// so every ordered rack pair is probed on every rail within
// ceil(19 / 4) = 5 epochs. Each epoch every rack fills 4 new offsets, on
// every rail: 20 · 4 = 80 more pairs per epoch (380 in all). The rails'
// windows start 3 offsets apart (h mod 19 = 7 and 10): on one rail or the
// other, 7 offsets after one epoch, then 4 more each epoch: 140, 220, 300,
// 380 pairs, all of them after 4 epochs.
TEST(Pinglist, EveryRackPairWithinTheBound) {
  const auto members = fleet(20, 4);
  const uint64_t start = 29'433'600;  // 2025-12-16 in 60 s epochs
  std::set<std::pair<std::string, std::string>> pairs[2];
  std::set<std::pair<std::string, std::string>> either;
  const std::size_t per_rail[5] = {80, 160, 240, 320, 380};
  const std::size_t any_rail[5] = {140, 220, 300, 380, 380};
  for (uint64_t e = 0; e < 5; ++e) {
    std::map<std::pair<std::string, std::string>, int> received;  // (rack, rail) -> probes
    for (const auto& self : members) {
      const Pinglist list = plan(members, self.id, 1, start + e);
      for (std::size_t r = 0; r < 2; ++r) {
        for (const auto i : list.remote.at(kRails[r])) {
          pairs[r].insert({self.group, members[i].group});
          either.insert({self.group, members[i].group});
          ++received[{members[i].group, kRails[r]}];
        }
      }
    }
    EXPECT_EQ(pairs[0].size(), per_rail[e]) << "epoch " << e;
    EXPECT_EQ(pairs[1].size(), per_rail[e]) << "epoch " << e;
    EXPECT_EQ(either.size(), any_rail[e]) << "epoch " << e;
    // Every rack's window holds the same 4 offsets: each rack is probed by
    // exactly 4 racks per rail and epoch.
    ASSERT_EQ(received.size(), 40u);
    for (const auto& [where, count] : received) {
      EXPECT_EQ(count, 4) << where.first << " " << where.second << " epoch " << e;
    }
  }
}

}  // namespace
}  // namespace rdma_exporter::probe
