// The UD probe's parts that need no RDMA device: the timing split, the
// sender's GID from a receive's first 40 bytes, flow labels, finding this
// host in the target list, the UD options, and the bounded series.

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>

#include "collectors/probe/plan/options.hpp"
#include "collectors/probe/plan/rails.hpp"
#include "collectors/probe/probers/ud_prober.hpp"
#include "collectors/probe/stats/stats.hpp"
#include "collectors/probe/ud/port.hpp"
#include "common/yaml_walker.hpp"
#include "tests/support/snapshot_query.hpp"

namespace rdma_exporter::probe {
namespace {

using rdma_exporter::testing::metrics_of;
using rdma_exporter::testing::sample;
using rdma_exporter::testing::series_count;

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

ProbeOptions parse(const std::string& yaml, std::vector<std::string>& errors) {
  const YAML::Node root = YAML::Load(yaml);
  Walker w("p.yml");
  ProbeOptions o;
  parse_probe_options(w, root["probe"], "probe", o);
  errors = w.take();
  for (auto& e : validate_probe_options(o)) errors.push_back(e);
  return o;
}

TEST(ProbeUdOptions, UdClassesPinglistAndHistograms) {
  std::vector<std::string> errors;
  const ProbeOptions o = parse(
      "probe:\n"
      "  classes:\n"
      "    - {name: u, op: ud, size: 256, flows: 8, tclass: 106}\n"
      "  histograms: target\n"
      "  pinglist: {group_label: tor, remote_per_rail: 3, epoch: 2m, group: spare}\n",
      errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  ASSERT_EQ(o.classes.size(), 1u);
  EXPECT_EQ(o.classes[0].op, Op::ud);
  EXPECT_EQ(o.classes[0].size, 256u);
  EXPECT_EQ(o.classes[0].flows, 8);
  EXPECT_EQ(o.histograms, "target");
  EXPECT_EQ(o.pinglist.group_label, "tor");
  EXPECT_EQ(o.pinglist.remote_per_rail, 3u);
  EXPECT_EQ(o.pinglist.epoch, std::chrono::minutes(2));
  EXPECT_EQ(o.pinglist.group, "spare");
}

TEST(ProbeUdOptions, DefaultsAreOneUdClassGroupHistogramsAndRackPinglists) {
  const ProbeOptions o;
  const auto classes = effective_classes(o);
  ASSERT_EQ(classes.size(), 1u);
  EXPECT_EQ(classes[0].op, Op::ud);
  EXPECT_EQ(classes[0].size, 64u);
  EXPECT_EQ(classes[0].flows, 4);
  EXPECT_EQ(o.histograms, "group");
  EXPECT_EQ(o.pinglist.group_label, "rack");
  EXPECT_EQ(o.pinglist.remote_per_rail, 4u);
  EXPECT_EQ(o.pinglist.epoch, std::chrono::seconds(60));
}

TEST(ProbeUdOptions, BadUdSettingsAreNamed) {
  std::vector<std::string> errors;
  parse(
      "probe:\n"
      "  classes:\n"
      "    - {name: small, op: ud, size: 16}\n"
      "    - {name: big, op: ud, size: 2048, mtu: 1024}\n"
      "    - {name: flows, op: ud, size: 64, tclass: 4, flows: 17}\n"
      "  histograms: pair\n"
      "  pinglist: {group_label: rail, epoch: 0s}\n",
      errors);
  const auto has = [&](const std::string& what) {
    return std::any_of(errors.begin(), errors.end(),
                       [&](const std::string& e) { return e.find(what) != std::string::npos; });
  };
  EXPECT_TRUE(has("probe.classes[0].size: a ud probe is 32 bytes up to its mtu (1024)"));
  EXPECT_TRUE(has("probe.classes[1].size: a ud probe is 32 bytes up to its mtu (1024)"));
  EXPECT_TRUE(has("probe.classes[2].flows"));
  EXPECT_TRUE(has("probe.histograms"));
  EXPECT_TRUE(has("probe.pinglist.group_label: the label \"rail\" is set by the probe itself"));
  EXPECT_TRUE(has("probe.pinglist.epoch: must be positive"));
}

// In the bounded shape a pair has its counters and last success only; a
// lost probe counts as a timeout, and by path once its path lost one.
TEST(ProbeUdStats, BoundedPairSeriesAndLostByPath) {
  ProbeStats stats;
  const Labels pair = {{"target", "t:1"}, {"device", "rxe0"}, {"op", "ud"}};
  auto s = stats.series(pair, SeriesShape{false, false});
  s->sent();
  s->sent();
  s->sent();
  s->success(20e-6, 1700000000.0);
  s->lost(2);
  s->lost(2);
  const Snapshot snap = metrics_of(stats);
  EXPECT_EQ(sample(snap, "rdma_probe_sent_total", pair), 3.0);
  EXPECT_EQ(sample(snap, "rdma_probe_timeouts_total", pair), 2.0);
  EXPECT_EQ(sample(snap, "rdma_probe_last_success_timestamp_seconds", pair), 1700000000.0);
  EXPECT_EQ(sample(snap, "rdma_probe_path_timeouts_total", {{"path", "2"}}), 2.0);
  EXPECT_EQ(series_count(snap, "rdma_probe_path_timeouts_total"), 1u);
  EXPECT_EQ(series_count(snap, "rdma_probe_latency_seconds"), 0u);
  EXPECT_EQ(series_count(snap, "rdma_probe_up"), 0u);
  // The per-target shape has the histogram and up as well.
  ProbeStats full;
  auto f = full.series(pair, SeriesShape{true, true});
  f->success(20e-6, 1.0);
  const Snapshot fs = metrics_of(full);
  EXPECT_EQ(series_count(fs, "rdma_probe_latency_seconds"), 1u);
  EXPECT_EQ(sample(fs, "rdma_probe_up", pair), 1.0);
}

TEST(ProbeUdStats, SharedHistogramsAreKeptWhileWanted) {
  ProbeStats stats;
  const Labels g1 = {{"device", "rxe0"}, {"scope", "group"}};
  const Labels g2 = {{"device", "rxe0"}, {"scope", "remote"}};
  auto a = stats.histogram("rdma_probe_group_latency_seconds", "h", g1);
  auto again = stats.histogram("rdma_probe_group_latency_seconds", "h", g1);
  EXPECT_EQ(a, again);
  auto b = stats.histogram("rdma_probe_group_latency_seconds", "h", g2);
  a->observe(3e-6);   // bucket le=5e-06
  a->observe(30e-6);  // bucket le=5e-05
  b->observe(1.0);
  Snapshot snap = metrics_of(stats);
  ASSERT_EQ(series_count(snap, "rdma_probe_group_latency_seconds"), 2u);
  for (const auto& f : snap.families) {
    if (f.name != "rdma_probe_group_latency_seconds") continue;
    for (const auto& m : f.metric) {
      if (m.label.back().value != "group") continue;
      EXPECT_EQ(m.histogram.sample_count, 2u);
      EXPECT_NEAR(m.histogram.sample_sum, 33e-6, 1e-12);
      // Cumulative: 0 up to 2.5e-6, 1 at 5e-6, 2 from 5e-5.
      EXPECT_EQ(m.histogram.bucket[1].cumulative_count, 0u);
      EXPECT_EQ(m.histogram.bucket[2].cumulative_count, 1u);
      EXPECT_EQ(m.histogram.bucket[5].cumulative_count, 2u);
    }
  }
  stats.retain_histograms({b});
  snap = metrics_of(stats);
  EXPECT_EQ(series_count(snap, "rdma_probe_group_latency_seconds"), 1u);
}

TEST(ProbeUdStats, PortCountsDropsByReasonAnswersAndPeers) {
  ProbeStats stats;
  const Labels port = {{"device", "rxe0"}, {"port", "1"}};
  auto u = stats.ud_port(port);
  u->dropped(ud_drop::not_admitted);
  u->dropped(ud_drop::not_admitted);
  u->dropped(ud_drop::malformed);
  u->answered();
  u->set_peers(7);
  Snapshot snap = metrics_of(stats);
  EXPECT_EQ(sample(snap, "rdma_probe_ud_dropped_total", {{"reason", "not_admitted"}}), 2.0);
  EXPECT_EQ(sample(snap, "rdma_probe_ud_dropped_total", {{"reason", "malformed"}}), 1.0);
  EXPECT_EQ(sample(snap, "rdma_probe_ud_answered_total", port), 1.0);
  EXPECT_EQ(sample(snap, "rdma_probe_ud_peers", port), 7.0);
  stats.retain_ud_ports({});
  snap = metrics_of(stats);
  EXPECT_EQ(series_count(snap, "rdma_probe_ud_peers"), 0u);
}

TEST(ProbeUdStats, PinglistReport) {
  ProbeStats stats;
  EXPECT_EQ(series_count(metrics_of(stats), "rdma_probe_pinglist_hosts"), 0u);
  stats.set_pinglist(PinglistReport{true, "rack7", "h7.example:10911", 29000000, 31, 4, 10000});
  const Snapshot snap = metrics_of(stats);
  EXPECT_EQ(sample(snap, "rdma_probe_pinglist_hosts", {{"scope", "group"}}), 31.0);
  EXPECT_EQ(sample(snap, "rdma_probe_pinglist_hosts", {{"scope", "remote"}}), 4.0);
  EXPECT_EQ(sample(snap, "rdma_probe_pinglist_fleet_hosts"), 10000.0);
  EXPECT_EQ(sample(snap, "rdma_probe_pinglist_epoch"), 29000000.0);
  EXPECT_EQ(sample(snap, "rdma_probe_pinglist_info",
                   {{"group", "rack7"}, {"address", "h7.example:10911"}, {"listed", "true"}}),
            1.0);
}

}  // namespace
}  // namespace rdma_exporter::probe
