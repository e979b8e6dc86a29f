// exporter/probe/stats: the probe's metrics: series labels, device and port state sets, target
// answers, histogram buckets.

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>
#include <filesystem>
#include <future>
#include <limits>
#include <thread>

#include "common/yaml_walker.hpp"
#include "exporter/probe/control/channel.hpp"
#include "exporter/probe/control/discovery.hpp"
#include "exporter/probe/control/responder.hpp"
#include "exporter/probe/plan/targets.hpp"
#include "exporter/probe/probe.hpp"
#include "exporter/probe/stats/health.hpp"
#include "exporter/probe/verbs/device.hpp"
#include "exporter/probe/wire/auth.hpp"
#include "tests/support/control_client.hpp"
#include "tests/support/responder_fixture.hpp"
#include "tests/support/snapshot_query.hpp"
#include "tests/support/wait.hpp"

namespace rdma_exporter::probe {
namespace {

using boost::asio::ip::tcp;
using rdma_exporter::testing::closed_by_peer;
using rdma_exporter::testing::has_family;
using rdma_exporter::testing::metrics_of;
using rdma_exporter::testing::read_message;
using rdma_exporter::testing::sample;
using rdma_exporter::testing::series_count;

TEST(ProbeStatsTest, SeriesCarryTargetClassAndTargetLabels) {
  ProbeStats stats;
  ProbeClass c;
  c.op = Op::send;
  c.size = 4096;
  c.tclass = 106;
  const RailPort local{"mlx5_3", 1, "10.3.0.0/16"};
  wire::PortAd remote;
  remote.device = "mlx5_7";
  remote.port = 2;
  remote.rail = "10.3.0.0/16";
  auto s = stats.series(series_labels("10.0.0.2:10911", local, remote, c, {{"rack", "r7"}}));
  s->sent();
  s->sent();
  s->success(12e-6, 1700000000.0);
  s->timeout();
  s->error(reason::refused);
  const Labels want = {{"target", "10.0.0.2:10911"},
                       {"device", "mlx5_3"},
                       {"port", "1"},
                       {"remote_device", "mlx5_7"},
                       {"remote_port", "2"},
                       {"rail", "10.3.0.0/16"},
                       {"op", "send"},
                       {"size", "4096"},
                       {"tclass", "106"},
                       {"rack", "r7"}};
  EXPECT_EQ(s->labels(), want);  // in this order
  const Snapshot snap = metrics_of(stats);
  EXPECT_EQ(sample(snap, "rdma_probe_sent_total", want), 2);
  EXPECT_EQ(sample(snap, "rdma_probe_timeouts_total", want), 1);
  Labels refused = want;
  refused.emplace_back("reason", "refused");
  EXPECT_EQ(sample(snap, "rdma_probe_errors_total", refused), 1);
  EXPECT_EQ(sample(snap, "rdma_probe_up", want), 0);
  EXPECT_EQ(sample(snap, "rdma_probe_last_success_timestamp_seconds", want), 1700000000.0);
  // The histogram: 12 us lands in the 25 us bucket and above.
  bool found = false;
  for (const auto& f : snap.families) {
    if (f.name != "rdma_probe_latency_seconds") continue;
    ASSERT_EQ(f.type, prometheus::MetricType::Histogram);
    ASSERT_EQ(f.metric.size(), 1u);
    const auto& h = f.metric[0].histogram;
    EXPECT_EQ(h.sample_count, 1u);
    EXPECT_DOUBLE_EQ(h.sample_sum, 12e-6);
    // le: 1us 2.5us 5us 10us | 25us ... 1s, +Inf
    std::vector<uint64_t> counts;
    for (const auto& b : h.bucket) counts.push_back(b.cumulative_count);
    EXPECT_EQ(counts,
              (std::vector<uint64_t>{0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}));
    found = true;
  }
  EXPECT_TRUE(found);
  // A target dropped from the configuration stops being exported.
  stats.retain({});
  EXPECT_EQ(series_count(metrics_of(stats), "rdma_probe_sent_total"), 0u);
}

// A UD pair of `local` to `target`'s mlx5_<remote> port 1, counted in `scope`.
std::shared_ptr<SeriesStats> ud_pair(ProbeStats& stats, const std::shared_ptr<ScopeStats>& scope,
                                     const std::string& target, int remote) {
  ProbeClass c;
  c.op = Op::ud;
  const RailPort local{"mlx5_2", 1, "rail-2"};
  wire::PortAd ad;
  ad.device = "mlx5_" + std::to_string(remote);
  ad.port = 1;
  ad.rail = "rail-2";
  auto s = stats.series(series_labels(target, local, ad, c, {}), SeriesShape{false, false});
  s->set_scope(scope);
  return s;
}

// Per local port and scope: the probes of all its pairs, and how many remote
// ports were probed and failed in the last 2 minutes, at explicit times.
TEST(ProbeStatsTest, ScopesSumTheirPairsAndCountPeersProbedAndFailingInTheWindow) {
  using std::chrono::seconds;
  ProbeStats stats;
  const Labels group_labels = {{"device", "mlx5_2"}, {"port", "1"},  {"rail", "rail-2"},
                               {"op", "ud"},         {"size", "64"}, {"tclass", "0"},
                               {"scope", "group"}};
  Labels remote_labels = group_labels;
  remote_labels.back().second = "remote";
  auto group = stats.scope(group_labels);
  auto remote = stats.scope(remote_labels);
  EXPECT_EQ(stats.scope(group_labels), group);  // made once

  const ProbeClock::time_point t0{seconds(100000)};
  // Group: three remote ports, on two hosts; remote: one.
  auto a1 = ud_pair(stats, group, "10.0.0.1:10911", 1);
  auto a4 = ud_pair(stats, group, "10.0.0.1:10911", 4);
  auto b1 = ud_pair(stats, group, "10.0.0.2:10911", 1);
  auto r5 = ud_pair(stats, remote, "10.9.0.7:10911", 5);
  for (int i = 0; i < 7; ++i) a1->sent(t0);
  for (int i = 0; i < 5; ++i) a4->sent(t0 + seconds(10));
  for (int i = 0; i < 3; ++i) b1->sent(t0 + seconds(20));
  for (int i = 0; i < 11; ++i) r5->sent(t0 + seconds(30));
  a4->lost(0, t0 + seconds(40));
  a4->lost(1, t0 + seconds(41));
  r5->lost(3, t0 + seconds(45));
  b1->invalid(invalid::local_stall);
  r5->invalid(invalid::responder_stall);
  r5->invalid(invalid::local_stall);

  Snapshot snap = metrics_of(stats, t0 + seconds(60));
  EXPECT_EQ(sample(snap, "rdma_probe_scope_sent_total", group_labels), 15);
  EXPECT_EQ(sample(snap, "rdma_probe_scope_timeouts_total", group_labels), 2);
  EXPECT_EQ(sample(snap, "rdma_probe_scope_invalid_total", group_labels), 1);
  EXPECT_EQ(sample(snap, "rdma_probe_scope_peers", group_labels), 3);
  EXPECT_EQ(sample(snap, "rdma_probe_scope_peers_failing", group_labels), 1);
  EXPECT_EQ(sample(snap, "rdma_probe_scope_sent_total", remote_labels), 11);
  EXPECT_EQ(sample(snap, "rdma_probe_scope_timeouts_total", remote_labels), 1);
  EXPECT_EQ(sample(snap, "rdma_probe_scope_invalid_total", remote_labels), 2);
  EXPECT_EQ(sample(snap, "rdma_probe_scope_peers", remote_labels), 1);
  EXPECT_EQ(sample(snap, "rdma_probe_scope_peers_failing", remote_labels), 1);
  // The pairs' own series count alike.
  EXPECT_EQ(sample(snap, "rdma_probe_sent_total", a4->labels()), 5);
  EXPECT_EQ(sample(snap, "rdma_probe_timeouts_total", a4->labels()), 2);

  // 2 minutes after a1's last probe it is still in the window; a second
  // later it is not. a4's loss leaves the window 2 minutes after it.
  snap = metrics_of(stats, t0 + seconds(120));
  EXPECT_EQ(sample(snap, "rdma_probe_scope_peers", group_labels), 3);
  snap = metrics_of(stats, t0 + seconds(121));
  EXPECT_EQ(sample(snap, "rdma_probe_scope_peers", group_labels), 2);
  EXPECT_EQ(sample(snap, "rdma_probe_scope_peers_failing", group_labels), 1);
  a4->sent(t0 + seconds(150));
  snap = metrics_of(stats, t0 + seconds(162));
  EXPECT_EQ(sample(snap, "rdma_probe_scope_peers", group_labels), 1);
  EXPECT_EQ(sample(snap, "rdma_probe_scope_peers_failing", group_labels), 0);
  // Counters only grow.
  EXPECT_EQ(sample(snap, "rdma_probe_scope_sent_total", group_labels), 16);
}

// The pinglist rotates remote targets every epoch: the pairs go, the
// scope's counters stay, and the remote ports it remembers are only those
// probed within the last two windows.
TEST(ProbeStatsTest, ScopesOutliveRotatedPairsAndForgetTheirPorts) {
  using std::chrono::seconds;
  ProbeStats stats;
  auto remote = stats.scope({{"device", "mlx5_2"}, {"scope", "remote"}});
  const ProbeClock::time_point t0{seconds(5000)};
  for (int epoch = 0; epoch < 50; ++epoch) {
    // 4 new remote ports each minute, each probed once.
    std::vector<std::shared_ptr<SeriesStats>> pairs;
    for (int k = 0; k < 4; ++k) {
      pairs.push_back(ud_pair(stats, remote, "10.8." + std::to_string(epoch) + ".1:10911", k));
      pairs.back()->sent(t0 + seconds(60 * epoch + k));
    }
    stats.retain(pairs);
  }
  EXPECT_LE(remote->remembered(), 4u * 5u);
  const Snapshot snap = metrics_of(stats, t0 + seconds(60 * 49 + 10));
  EXPECT_EQ(
      sample(snap, "rdma_probe_scope_sent_total", {{"device", "mlx5_2"}, {"scope", "remote"}}),
      200);
  // Probed in the last 2 minutes: this minute's and the last (the one
  // before, 127 to 130 s ago, is out).
  EXPECT_EQ(sample(snap, "rdma_probe_scope_peers", {{"device", "mlx5_2"}, {"scope", "remote"}}), 8);
  EXPECT_EQ(series_count(snap, "rdma_probe_sent_total"), 4u);
  stats.retain_scopes({});
  EXPECT_EQ(series_count(metrics_of(stats), "rdma_probe_scope_sent_total"), 0u);
}

// The samples of the family `name`, one line each as in the text format
// (labels in the order they were given), in the order they were added.
std::vector<std::string> lines_of(const Snapshot& snap, const std::string& name) {
  std::vector<std::string> out;
  for (const auto& f : snap.families) {
    if (f.name != name) continue;
    for (const auto& m : f.metric) {
      std::string line = name;
      for (std::size_t i = 0; i < m.label.size(); ++i) {
        line += (i == 0 ? "{" : ",") + m.label[i].name + "=\"" + m.label[i].value + "\"";
      }
      if (!m.label.empty()) line += "}";
      const double v = f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
      char number[32];
      std::snprintf(number, sizeof number, " %g", v);
      out.push_back(line + number);
    }
  }
  return out;
}

using Lines = std::vector<std::string>;

TEST(ProbeStatsTest, DevicesAndPortsAreStateSetsWithRailsAndInfo) {
  ProbeStats stats;
  stats.set_local({{"mlx5_0", device_state::in_use, true, false},
                   {"mlx5_1", device_state::excluded, false, false},
                   {"mlx5_2", device_state::failed, false, false},
                   {"mlx5_3", device_state::gone, false, false},
                   {"mlx5_4", device_state::in_use, false, true}},
                  {{"mlx5_0", 1, port_state::probing, "192.168.100.0/24"},
                   {"mlx5_0", 2, port_state::down, "rail-b"},
                   {"mlx5_4", 1, port_state::excluded, ""},
                   {"mlx5_4", 2, port_state::inactive, ""},
                   {"mlx5_4", 3, port_state::no_gid, ""}},
                  "udmabuf");
  const Snapshot snap = metrics_of(stats);
  EXPECT_EQ(lines_of(snap, "rdma_probe_device_info"),
            (Lines{
                "rdma_probe_device_info{device=\"mlx5_0\",domain=\"thread_domain\",clock=\"host\","
                "memory=\"udmabuf\"} 1",
                "rdma_probe_device_info{device=\"mlx5_4\",domain=\"pd\",clock=\"completion_"
                "timestamp\",memory=\"udmabuf\"} 1",
            }));
  EXPECT_EQ(lines_of(snap, "rdma_probe_device_state"),
            (Lines{
                "rdma_probe_device_state{device=\"mlx5_0\",state=\"in_use\"} 1",
                "rdma_probe_device_state{device=\"mlx5_0\",state=\"excluded\"} 0",
                "rdma_probe_device_state{device=\"mlx5_0\",state=\"failed\"} 0",
                "rdma_probe_device_state{device=\"mlx5_0\",state=\"gone\"} 0",
                "rdma_probe_device_state{device=\"mlx5_1\",state=\"in_use\"} 0",
                "rdma_probe_device_state{device=\"mlx5_1\",state=\"excluded\"} 1",
                "rdma_probe_device_state{device=\"mlx5_1\",state=\"failed\"} 0",
                "rdma_probe_device_state{device=\"mlx5_1\",state=\"gone\"} 0",
                "rdma_probe_device_state{device=\"mlx5_2\",state=\"in_use\"} 0",
                "rdma_probe_device_state{device=\"mlx5_2\",state=\"excluded\"} 0",
                "rdma_probe_device_state{device=\"mlx5_2\",state=\"failed\"} 1",
                "rdma_probe_device_state{device=\"mlx5_2\",state=\"gone\"} 0",
                "rdma_probe_device_state{device=\"mlx5_3\",state=\"in_use\"} 0",
                "rdma_probe_device_state{device=\"mlx5_3\",state=\"excluded\"} 0",
                "rdma_probe_device_state{device=\"mlx5_3\",state=\"failed\"} 0",
                "rdma_probe_device_state{device=\"mlx5_3\",state=\"gone\"} 1",
                "rdma_probe_device_state{device=\"mlx5_4\",state=\"in_use\"} 1",
                "rdma_probe_device_state{device=\"mlx5_4\",state=\"excluded\"} 0",
                "rdma_probe_device_state{device=\"mlx5_4\",state=\"failed\"} 0",
                "rdma_probe_device_state{device=\"mlx5_4\",state=\"gone\"} 0",
            }));
  const auto port = [](const char* device, int number, const char* state, int v) {
    return "rdma_probe_port_state{device=\"" + std::string(device) + "\",port=\"" +
           std::to_string(number) + "\",state=\"" + state + "\"} " + std::to_string(v);
  };
  EXPECT_EQ(lines_of(snap, "rdma_probe_port_state"),
            (Lines{
                port("mlx5_0", 1, "probing", 1),  port("mlx5_0", 1, "down", 0),
                port("mlx5_0", 1, "excluded", 0), port("mlx5_0", 1, "inactive", 0),
                port("mlx5_0", 1, "no_gid", 0),   port("mlx5_0", 2, "probing", 0),
                port("mlx5_0", 2, "down", 1),     port("mlx5_0", 2, "excluded", 0),
                port("mlx5_0", 2, "inactive", 0), port("mlx5_0", 2, "no_gid", 0),
                port("mlx5_4", 1, "probing", 0),  port("mlx5_4", 1, "down", 0),
                port("mlx5_4", 1, "excluded", 1), port("mlx5_4", 1, "inactive", 0),
                port("mlx5_4", 1, "no_gid", 0),   port("mlx5_4", 2, "probing", 0),
                port("mlx5_4", 2, "down", 0),     port("mlx5_4", 2, "excluded", 0),
                port("mlx5_4", 2, "inactive", 1), port("mlx5_4", 2, "no_gid", 0),
                port("mlx5_4", 3, "probing", 0),  port("mlx5_4", 3, "down", 0),
                port("mlx5_4", 3, "excluded", 0), port("mlx5_4", 3, "inactive", 0),
                port("mlx5_4", 3, "no_gid", 1),
            }));
  // Ports with a rail: those in use.
  EXPECT_EQ(lines_of(snap, "rdma_probe_port_rail_info"),
            (Lines{
                "rdma_probe_port_rail_info{device=\"mlx5_0\",port=\"1\",rail=\"192.168.100.0/"
                "24\"} 1",
                "rdma_probe_port_rail_info{device=\"mlx5_0\",port=\"2\",rail=\"rail-b\"} 1",
            }));
  EXPECT_EQ(lines_of(snap, "rdma_probe_device_releases_total"), Lines{});

  // The next report replaces the last: a device that left is forgotten,
  // its releases counted.
  stats.device_released("mlx5_0", "removed");
  stats.device_released("mlx5_0", "fatal_event");
  stats.device_released("mlx5_0", "removed");
  stats.device_released("mlx5_1", "excluded");
  stats.set_local({{"mlx5_0", device_state::gone, false, false}}, {}, "host");
  const Snapshot after = metrics_of(stats);
  EXPECT_EQ(lines_of(after, "rdma_probe_device_info"), Lines{});
  EXPECT_EQ(lines_of(after, "rdma_probe_port_state"), Lines{});
  EXPECT_EQ(lines_of(after, "rdma_probe_port_rail_info"), Lines{});
  EXPECT_EQ(lines_of(after, "rdma_probe_device_state"),
            (Lines{
                "rdma_probe_device_state{device=\"mlx5_0\",state=\"in_use\"} 0",
                "rdma_probe_device_state{device=\"mlx5_0\",state=\"excluded\"} 0",
                "rdma_probe_device_state{device=\"mlx5_0\",state=\"failed\"} 0",
                "rdma_probe_device_state{device=\"mlx5_0\",state=\"gone\"} 1",
            }));
  EXPECT_EQ(lines_of(after, "rdma_probe_device_releases_total"),
            (Lines{
                "rdma_probe_device_releases_total{device=\"mlx5_0\",reason=\"fatal_event\"} 1",
                "rdma_probe_device_releases_total{device=\"mlx5_0\",reason=\"removed\"} 2",
                "rdma_probe_device_releases_total{device=\"mlx5_1\",reason=\"excluded\"} 1",
            }));
}

TEST(ProbeStatsTest, TargetsSayWhetherTheyAnswerAndWithHowManyPorts) {
  ProbeStats stats;
  const Labels a = {{"target", "10.0.0.2:10911"}, {"rack", "r7"}};
  const Labels b = {{"target", "10.0.0.3:10911"}};
  auto ta = stats.target(a);
  EXPECT_EQ(stats.target(a), ta);  // one per set of labels
  auto tb = stats.target(b);
  EXPECT_NE(tb, ta);
  ta->answered(3);
  tb->failed(reason::refused);
  tb->failed(reason::refused);
  tb->failed(reason::connect_timeout);
  Snapshot snap = metrics_of(stats);
  EXPECT_EQ(lines_of(snap, "rdma_probe_target_up"),
            (Lines{"rdma_probe_target_up{target=\"10.0.0.2:10911\",rack=\"r7\"} 1",
                   "rdma_probe_target_up{target=\"10.0.0.3:10911\"} 0"}));
  EXPECT_EQ(lines_of(snap, "rdma_probe_target_ports"),
            (Lines{"rdma_probe_target_ports{target=\"10.0.0.2:10911\",rack=\"r7\"} 3",
                   "rdma_probe_target_ports{target=\"10.0.0.3:10911\"} 0"}));
  EXPECT_EQ(
      lines_of(snap, "rdma_probe_discovery_errors_total"),
      (Lines{"rdma_probe_discovery_errors_total{target=\"10.0.0.3:10911\",reason=\"connect_"
             "timeout\"} 1",
             "rdma_probe_discovery_errors_total{target=\"10.0.0.3:10911\",reason=\"refused\"} "
             "2"}));

  // A failure after an answer: down, with the ports it had; an answer with
  // no ports: up, with none.
  ta->failed(reason::disconnected);
  tb->answered(0);
  snap = metrics_of(stats);
  EXPECT_EQ(lines_of(snap, "rdma_probe_target_up"),
            (Lines{"rdma_probe_target_up{target=\"10.0.0.2:10911\",rack=\"r7\"} 0",
                   "rdma_probe_target_up{target=\"10.0.0.3:10911\"} 1"}));
  EXPECT_EQ(lines_of(snap, "rdma_probe_target_ports"),
            (Lines{"rdma_probe_target_ports{target=\"10.0.0.2:10911\",rack=\"r7\"} 3",
                   "rdma_probe_target_ports{target=\"10.0.0.3:10911\"} 0"}));
  EXPECT_EQ(sample(snap, "rdma_probe_discovery_errors_total",
                   {{"target", "10.0.0.2:10911"}, {"reason", "disconnected"}}),
            1);

  // Targets no longer configured stop being exported.
  stats.retain_targets({tb});
  snap = metrics_of(stats);
  EXPECT_EQ(lines_of(snap, "rdma_probe_target_up"),
            (Lines{"rdma_probe_target_up{target=\"10.0.0.3:10911\"} 1"}));
  EXPECT_EQ(lines_of(snap, "rdma_probe_target_ports"),
            (Lines{"rdma_probe_target_ports{target=\"10.0.0.3:10911\"} 0"}));
  EXPECT_EQ(series_count(snap, "rdma_probe_discovery_errors_total"), 2u);
  // One asked for again starts afresh.
  EXPECT_NE(stats.target(a), ta);
  stats.retain_targets({});
  EXPECT_FALSE(has_family(metrics_of(stats), "rdma_probe_target_up"));
}

TEST(ProbeStatsTest, BucketsSpanOneMicrosecondToOneSecond) {
  // 1, 2.5 and 5 per decade, 1 us to 1 s: 19 buckets.
  EXPECT_EQ(latency_buckets(),
            (std::vector<double>{1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3,
                                 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1.0}));
}

TEST(ProbeStatsTest, LatenciesLandInTheirBuckets) {
  ProbeStats stats;
  auto s = stats.series({{"target", "t"}});
  s->success(2.5e-5, 1);  // on a bound: counted in it (le is inclusive)
  s->success(2.6e-5, 1);  // just above: the 50 us bucket
  s->success(0.003, 1);   // 3 ms: the 5 ms bucket
  s->success(2.0, 1);     // above 1 s: +Inf only
  const Snapshot snap = metrics_of(stats);
  std::vector<std::pair<double, uint64_t>> got;
  for (const auto& f : snap.families) {
    if (f.name != "rdma_probe_latency_seconds") continue;
    for (const auto& b : f.metric.at(0).histogram.bucket) {
      got.emplace_back(b.upper_bound, b.cumulative_count);
    }
  }
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(got, (std::vector<std::pair<double, uint64_t>>{
                     {1e-6, 0},   {2.5e-6, 0}, {5e-6, 0},   {1e-5, 0},   {2.5e-5, 1},
                     {5e-5, 2},   {1e-4, 2},   {2.5e-4, 2}, {5e-4, 2},   {1e-3, 2},
                     {2.5e-3, 2}, {5e-3, 3},   {1e-2, 3},   {2.5e-2, 3}, {5e-2, 3},
                     {0.1, 3},    {0.25, 3},   {0.5, 3},    {1.0, 3},    {inf, 4}}));
}
}  // namespace
}  // namespace rdma_exporter::probe
