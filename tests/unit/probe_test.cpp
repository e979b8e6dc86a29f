// The probe's parts that need no RDMA device: options, file_sd targets,
// metrics, the responder's defences (it refuses before it allocates
// anything), and the discovery of a target's ports.

#include "collectors/probe/probe.hpp"

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

#include "collectors/probe/auth.hpp"
#include "collectors/probe/control.hpp"
#include "collectors/probe/discovery.hpp"
#include "collectors/probe/health.hpp"
#include "collectors/probe/responder.hpp"
#include "collectors/probe/targets.hpp"
#include "collectors/probe/verbs_device.hpp"
#include "common/yaml_walker.hpp"
#include "snapshot_query.hpp"
#include "tests/support/control_client.hpp"
#include "tests/support/responder_fixture.hpp"
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

TEST(ProbeTargets, FileSdGroupsBecomeTargetsWithLabels) {
  const std::string json = R"([
    {"targets": ["10.0.0.1:10911", "[fe80::1]:10911"], "labels": {"rack": "r1", "__meta_x": "y"}},
    {"targets": ["host-b:10911"]}
  ])";
  auto t = parse_file_sd(json, "peers.json");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->size(), 3u);
  EXPECT_EQ((*t)[0].address, "10.0.0.1:10911");
  EXPECT_EQ((*t)[0].labels, (std::map<std::string, std::string>{{"rack", "r1"}}));
  EXPECT_EQ((*t)[1].address, "[fe80::1]:10911");
  EXPECT_TRUE((*t)[2].labels.empty());
  // YAML works too, and an empty file means no targets.
  auto y = parse_file_sd("- targets: [a:1]\n  labels: {zone: z}\n", "peers.yml");
  ASSERT_TRUE(y);
  EXPECT_EQ(y->at(0).labels.at("zone"), "z");
  EXPECT_TRUE(parse_file_sd("", "empty.yml")->empty());
}

// The meta label __rail__ is the targets' rail; other __ labels are dropped.
TEST(ProbeTargets, FileSdRailIsTheMetaLabelRail) {
  auto t = parse_file_sd(
      "- targets: [a:1, b:2]\n"
      "  labels: {__rail__: 192.168.100.0/24, __meta_x: y, rack: r1}\n"
      "- targets: [c:3]\n",
      "peers.yml");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->size(), 3u);
  EXPECT_EQ((*t)[0], (Target{"a:1", {{"rack", "r1"}}, {}, "192.168.100.0/24"}));
  EXPECT_EQ((*t)[1], (Target{"b:2", {{"rack", "r1"}}, {}, "192.168.100.0/24"}));
  EXPECT_EQ((*t)[2], (Target{"c:3", {}, {}, ""}));
}

// The probe sets these labels on every series; a target may not.
TEST(ProbeTargets, LabelsTheProbeSetsAreReserved) {
  for (const char* name : {"target", "device", "port", "remote_device", "remote_port", "rail", "op",
                           "size", "tclass", "reason", "le"}) {
    EXPECT_EQ(target_label_problem(name),
              std::string("the label \"") + name + "\" is set by the probe itself");
    auto r =
        parse_file_sd(std::string("- targets: [a:1]\n  labels: {") + name + ": x}\n", "peers.yml");
    ASSERT_FALSE(r) << name;
    EXPECT_EQ(r.error().message,
              std::string("peers.yml:2:12: the label \"") + name + "\" is set by the probe itself");
  }
  EXPECT_EQ(target_label_problem("devices"), "");
  EXPECT_EQ(target_label_problem("rail_group"), "");
  // In the configuration too.
  const YAML::Node root = YAML::Load(
      "probe:\n"
      "  targets:\n"
      "    - {address: 'a:1', labels: {remote_device: x, zone: z}}\n");
  Walker w("p.yml");
  ProbeOptions o;
  parse_probe_options(w, root["probe"], "probe", o);
  EXPECT_EQ(w.take(), (std::vector<std::string>{
                          "p.yml:3:33: probe.targets[0].labels.remote_device: the label "
                          "\"remote_device\" is set by the probe itself"}));
  ASSERT_EQ(o.targets.size(), 1u);
  EXPECT_EQ(o.targets[0].labels, (std::map<std::string, std::string>{{"zone", "z"}}));
}

TEST(ProbeTargets, BadFileSdNamesTheFileAndPlace) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{targets: [a:1]}", "expected a list"},
      {"- targets: a:1", "expected a list"},
      {"- targets: [nohostport]", "host:port"},
      {"- targets: [a:0]", "host:port"},
      {"- targets: [':1']", "host:port"},
      {"- targets: [a:1]\n  labels: {target: x}", "set by the probe"},
      {"- targets: [a:1]\n  labels: {'bad-name': x}", "not a valid label name"},
      {"- targets: [a:1]\n  labels: {ok: [1]}", "expected a string"},
      {"- targets: [a:1]\n  extra: 1", "unknown key"},
      {"[", "peers.yml:"},
      {"- 5", "expected a mapping"},
  };
  for (const auto& [text, want] : bad) {
    auto r = parse_file_sd(text, "peers.yml");
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.error().message.find(want), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.rfind("peers.yml", 0), 0u) << r.error().message;
  }
}

TEST(ProbeOptionsCheck, ProblemsAreNamed) {
  ProbeOptions o;
  ProbeClass a;
  a.name = "lat";
  ProbeClass b = a;  // same name, same op/size/tclass
  b.mtu = 1000;
  b.size = 1 << 21;
  o.classes = {a, b};
  o.targets = {Target{"nohost", {}, {"missing"}}};
  o.backoff_max = std::chrono::milliseconds(1);
  const auto errors = validate_probe_options(o);
  const auto has = [&](const std::string& s) {
    return std::any_of(errors.begin(), errors.end(),
                       [&](const std::string& e) { return e.find(s) != std::string::npos; });
  };
  EXPECT_TRUE(has("probe.classes[1].name: \"lat\" is used twice"));
  EXPECT_TRUE(has("probe.classes[1].mtu"));
  EXPECT_TRUE(has("probe.classes[1].size: above probe.max_message_size"));
  EXPECT_TRUE(has("probe.targets[0].address"));
  EXPECT_TRUE(has("no class named \"missing\""));
  EXPECT_TRUE(has("probe.backoff_max"));
  EXPECT_TRUE(validate_probe_options(ProbeOptions{}).empty());
  EXPECT_EQ(effective_classes(ProbeOptions{}).size(), 1u);
}

TEST(ProbeOptionsDefaults, EveryPortEveryDeviceSameRailAndRoomForHosts) {
  const ProbeOptions o;
  EXPECT_EQ(o.device, "");  // every device
  EXPECT_EQ(o.port, std::nullopt);
  EXPECT_EQ(o.link_layer, "");
  EXPECT_TRUE(o.rails.empty());
  EXPECT_FALSE(o.cross_rail);
  EXPECT_EQ(o.discovery_interval, std::chrono::seconds(30));
  EXPECT_EQ(o.responder.max_sessions, 1024);
  EXPECT_EQ(o.responder.max_sessions_per_source, 128);
  EXPECT_EQ(Target{}.rail, "");
}

// Every problem of the device pattern, rails and discovery interval, one
// line each, worded exactly.
TEST(ProbeOptionsCheck, DevicePatternRailsAndDiscoveryIntervalAreChecked) {
  const auto problems = [](auto change) {
    ProbeOptions o;
    change(o);
    return validate_probe_options(o);
  };
  using Lines = std::vector<std::string>;
  // The device is a regular expression of the whole name.
  EXPECT_EQ(problems([](ProbeOptions& o) { o.device = "mlx5_[0-3]|ib.*"; }), Lines{});
  const auto bad = problems([](ProbeOptions& o) { o.device = "mlx5_["; });
  ASSERT_EQ(bad.size(), 1u) << ::testing::PrintToString(bad);
  const std::string prefix = "probe.device: not a regular expression: ";
  EXPECT_EQ(bad[0].substr(0, prefix.size()), prefix);
  EXPECT_EQ(bad[0].substr(prefix.size()), "missing ]: [");  // and what RE2 says
  EXPECT_EQ(problems([](ProbeOptions& o) { o.device = std::string(1025, 'a'); }),
            Lines{"probe.device: a pattern of 1025 bytes, more than the 1024 allowed"});
  EXPECT_EQ(problems([](ProbeOptions& o) { o.device = std::string(1024, 'a'); }), Lines{});
  // RE2 parses without recursion: deep nesting within the size is fine.
  EXPECT_EQ(problems([](ProbeOptions& o) {
              o.device = std::string(33, '(') + "a" + std::string(33, ')');
            }),
            Lines{});
  EXPECT_EQ(problems([](ProbeOptions& o) { o.device = "(mlx5_)\\1"; }),
            Lines{"probe.device: not a regular expression: back-references (\\1 to \\9) are not "
                  "supported (RE2 syntax); a character by its code is written \\x41"});
  // Rails: 1 to 64 printable ASCII characters.
  EXPECT_EQ(problems([](ProbeOptions& o) {
              o.rails = {{"mlx5_0", std::string(64, 'r')}, {"mlx5_1/1", "~ "}};
              o.targets = {Target{"a:1", {}, {}, "192.168.100.0/24"}, Target{"b:1", {}, {}, ""}};
            }),
            Lines{});
  EXPECT_EQ(problems([](ProbeOptions& o) {
              o.rails = {{"mlx5_0", ""},
                         {"mlx5_0/1", std::string(65, 'r')},
                         {"mlx5_1", "tab\there"},
                         {"mlx5_2", "r\x7f"}};
              o.targets = {Target{"a:1", {}, {}, "ok"}, Target{"b:1", {}, {}, "caf\xc3\xa9"}};
              o.discovery_interval = std::chrono::milliseconds(0);
            }),
            (Lines{
                "probe.discovery_interval: must be positive",
                "probe.rails.mlx5_0: a rail is 1 to 64 printable ASCII characters",
                "probe.rails.mlx5_0/1: a rail is 1 to 64 printable ASCII characters",
                "probe.rails.mlx5_1: a rail is 1 to 64 printable ASCII characters",
                "probe.rails.mlx5_2: a rail is 1 to 64 printable ASCII characters",
                "probe.targets[1].rail: a rail is 1 to 64 printable ASCII characters",
            }));
  // Keys: a device name or device/port, port 1 to 255.
  EXPECT_EQ(problems([](ProbeOptions& o) {
              o.rails = {{"mlx5_0/x", "a"}, {"mlx5_0/0", "a"}, {"mlx5_0/256", "a"},
                         {"/1", "a"},       {"mlx5_0/", "a"},  {"mlx5_0/255", "a"}};
            }),
            (Lines{
                "probe.rails./1: expected a device name or device/port",
                "probe.rails.mlx5_0/: expected a device name or device/port",
                "probe.rails.mlx5_0/0: expected a device name or device/port",
                "probe.rails.mlx5_0/256: expected a device name or device/port",
                "probe.rails.mlx5_0/x: expected a device name or device/port",
            }));
}

TEST(ProbeOptionsParse, PortsRailsAndDiscoveryAreRead) {
  const YAML::Node root = YAML::Load(
      "probe:\n"
      "  device: 'mlx5_[0-3]'\n"
      "  link_layer: infiniband\n"
      "  rails: {mlx5_0: rail-a, mlx5_1/2: rail-b}\n"
      "  cross_rail: true\n"
      "  discovery_interval: 5s\n"
      "  targets:\n"
      "    - {address: 'h:1', rail: rail-a}\n");
  Walker w("p.yml");
  ProbeOptions o;
  parse_probe_options(w, root["probe"], "probe", o);
  EXPECT_EQ(w.take(), std::vector<std::string>{});
  EXPECT_EQ(o.device, "mlx5_[0-3]");
  EXPECT_EQ(o.port, std::nullopt);
  EXPECT_EQ(o.link_layer, "infiniband");
  EXPECT_EQ(o.rails,
            (std::map<std::string, std::string>{{"mlx5_0", "rail-a"}, {"mlx5_1/2", "rail-b"}}));
  EXPECT_TRUE(o.cross_rail);
  EXPECT_EQ(o.discovery_interval, std::chrono::seconds(5));
  ASSERT_EQ(o.targets.size(), 1u);
  EXPECT_EQ(o.targets[0], (Target{"h:1", {}, {}, "rail-a"}));
  EXPECT_TRUE(validate_probe_options(o).empty());
}

TEST(ProbeOptionsParse, PortsRailsAndDiscoveryProblemsAreWordedExactly) {
  const YAML::Node root = YAML::Load(
      "probe:\n"
      "  link_layer: ethernt\n"
      "  rails: [mlx5_0]\n"
      "  port: 0\n"
      "  discovery_interval: soon\n"
      "  cross_rail: maybe\n");
  Walker w("p.yml");
  ProbeOptions o;
  parse_probe_options(w, root["probe"], "probe", o);
  EXPECT_EQ(w.take(),
            (std::vector<std::string>{
                "p.yml:2:15: probe.link_layer: expected one of ethernet, infiniband, got "
                "\"ethernt\"",
                "p.yml:3:10: probe.rails: expected a mapping of device or device/port to a rail",
                "p.yml:4:9: probe.port: expected an integer from 1 to 255, got \"0\"",
                "p.yml:5:23: probe.discovery_interval: expected a duration such as 500ms, 10s, "
                "1m30s, got \"soon\"",
                "p.yml:6:15: probe.cross_rail: expected true or false",
            }));
  EXPECT_EQ(o.link_layer, "");
  EXPECT_EQ(o.port, std::nullopt);
  Walker w2("q.yml");
  ProbeOptions o2;
  parse_probe_options(w2, YAML::Load("rails: {mlx5_0: [a], mlx5_1: b}\n"), "probe", o2);
  EXPECT_EQ(w2.take(),
            (std::vector<std::string>{"q.yml:1:17: probe.rails.mlx5_0: expected a string"}));
  EXPECT_EQ(o2.rails, (std::map<std::string, std::string>{{"mlx5_1", "b"}}));
}

// The probe's section is read by the probe, with the daemon's walker; its
// messages name the file, line, column and key.
TEST(ProbeOptionsParse, SectionIsReadAndProblemsAreWordedExactly) {
  const YAML::Node root = YAML::Load(
      "probe:\n"
      "  port: 2\n"
      "  classes:\n"
      "    - {name: a, op: atomic, sl: 16, busy_poll: 20us}\n"
      "  memory: gpu\n");
  Walker w("p.yml");
  ProbeOptions o;
  parse_probe_options(w, root["probe"], "probe", o);
  EXPECT_EQ(w.take(),
            (std::vector<std::string>{
                "p.yml:4:21: probe.classes[0].op: expected one of send, write, read, ud, got "
                "\"atomic\"",
                "p.yml:4:33: probe.classes[0].sl: expected an integer from 0 to 15, got \"16\"",
                "p.yml:5:11: probe.memory: expected one of host, udmabuf, got \"gpu\"",
            }));
  EXPECT_EQ(o.port, std::optional<uint8_t>(2));
  ASSERT_EQ(o.classes.size(), 1u);
  EXPECT_EQ(o.classes[0].name, "a");
  EXPECT_EQ(o.classes[0].busy_poll, std::chrono::microseconds(20));
  EXPECT_EQ(o.memory, "host");
}

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

TEST(ProbeVerbs, DeviceClockTicksBecomeSeconds) {
  // mlx5's hca_core_clock is in kHz: 1,000,000 kHz is a 1 GHz clock.
  EXPECT_DOUBLE_EQ(ticks_to_seconds(1000, 1000000), 1e-6);
  EXPECT_DOUBLE_EQ(ticks_to_seconds(156250, 156250), 1e-3);
  EXPECT_EQ(ticks_to_seconds(1000, 0), 0);  // no clock, no number
}

TEST(ProbeVerbs, MtuBytesAndEnumsRoundTrip) {
  for (uint32_t bytes : {256u, 512u, 1024u, 2048u, 4096u}) {
    EXPECT_EQ(mtu_bytes(mtu_enum(bytes)), bytes);
  }
  EXPECT_EQ(mtu_enum(4096), IBV_MTU_4096);
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

TEST(ProbeHealthTest, ProblemsInAFixedOrderUntilCleared) {
  ProbeHealth h;
  EXPECT_EQ(h.problems(), std::vector<std::string>{"the probe responder is not listening"});
  h.set_listening(true);
  EXPECT_TRUE(h.problems().empty());
  h.set_file_sd_problem("/b.json", "file_sd /b.json: Permission denied");
  h.set_file_sd_problem("/a.json", "file_sd /a.json: No such file or directory");
  h.set_memory_problem("probe.memory udmabuf cannot be used on mlx5_0: no udmabuf");
  h.set_device_problem("no RDMA device named mlx5_9");
  h.set_loop_failed("bad_alloc");
  EXPECT_EQ(h.problems(), (std::vector<std::string>{
                              "the probe's event loop stopped: bad_alloc",
                              "no RDMA device named mlx5_9",
                              "probe.memory udmabuf cannot be used on mlx5_0: no udmabuf",
                              "file_sd /a.json: No such file or directory",
                              "file_sd /b.json: Permission denied",
                          }));
  h.set_file_sd_problem("/a.json", "");
  h.set_device_problem("");
  h.set_memory_problem("");
  EXPECT_EQ(h.problems(), (std::vector<std::string>{"the probe's event loop stopped: bad_alloc",
                                                    "file_sd /b.json: Permission denied"}));
  h.forget_file_sd();
  h.set_listening(false);
  EXPECT_EQ(h.problems(), (std::vector<std::string>{"the probe's event loop stopped: bad_alloc",
                                                    "the probe responder is not listening"}));
}

void write_text(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr) << path;
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

// The service as the daemon's collector sees it: its metrics, and what is
// wrong with the probe itself. This host may have no RDMA at all.
TEST(ProbeServiceTest, CollectReturnsTheProbesOwnProblems) {
  const std::string dir = ::testing::TempDir() + "/probe_service_collect";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  write_text(dir + "/bad.yml", "targets: [a:1]\n");
  ProbeOptions o;
  o.enabled = true;
  o.device = "rdma_exporter_test_no_such_device";
  o.listen_address = "127.0.0.1:0";
  o.file_sd = {dir + "/bad.yml", dir + "/missing.yml"};
  // Targets that do not answer are not a problem of the probe.
  o.targets = {Target{"127.0.0.1:1", {}, {}}};
  o.loopback = true;
  ProbeService service(o);
  MetricSink before;
  EXPECT_EQ(service.collect(before),
            std::vector<std::string>{"the probe responder is not listening"});

  ASSERT_TRUE(service.start());
  service.settle();
  MetricSink sink;
  auto problems = service.collect(sink);
  ASSERT_EQ(problems.size(), 3u) << ::testing::PrintToString(problems);
  // Without the verbs kernel interface, listing fails; with it, the name is
  // not found.
  EXPECT_TRUE(problems[0] == "listing RDMA devices: Function not implemented" ||
              problems[0] == "no RDMA port to probe from")
      << problems[0];
  EXPECT_EQ(problems[1], "file_sd: " + dir + "/bad.yml:1:1: expected a list of target groups");
  EXPECT_EQ(problems[2], "file_sd " + dir + "/missing.yml: No such file or directory");
  Snapshot snap;
  snap.families = sink.take();
  EXPECT_EQ(sample(snap, "rdma_probe_file_sd_last_read_successful"), 0);
  EXPECT_EQ(sample(snap, "rdma_probe_targets", {{"source", "static"}}), 1);

  // Both files readable now: only the device is left.
  write_text(dir + "/bad.yml", "- targets: [a:1, b:2]\n");
  write_text(dir + "/missing.yml", "[]\n");
  service.update(o);
  service.settle();
  MetricSink after;
  problems = service.collect(after);
  ASSERT_EQ(problems.size(), 1u) << ::testing::PrintToString(problems);
  snap.families = after.take();
  EXPECT_EQ(sample(snap, "rdma_probe_targets", {{"source", "file_sd"}}), 2);

  // A list of files without the failing one forgets its problem.
  write_text(dir + "/bad.yml", "oops: [\n");
  service.update(o);
  service.settle();
  MetricSink broken;
  problems = service.collect(broken);
  ASSERT_EQ(problems.size(), 2u) << ::testing::PrintToString(problems);
  EXPECT_EQ(problems[1].rfind("file_sd: " + dir + "/bad.yml:", 0), 0u) << problems[1];
  o.file_sd = {dir + "/missing.yml"};
  service.update(o);
  service.settle();
  MetricSink fixed;
  EXPECT_EQ(service.collect(fixed).size(), 1u);

  service.stop();
  MetricSink stopped;
  problems = service.collect(stopped);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0], "the probe responder is not listening");
}

// A responder without an RDMA device on a loopback port, and blocking
// clients that talk to it.
class ResponderTest : public rdma_exporter::testing::ResponderFixture {
 protected:
  static wire::RejectCode reject_code(const std::optional<wire::Message>& m) {
    EXPECT_TRUE(m && std::holds_alternative<wire::Reject>(*m));
    return m && std::holds_alternative<wire::Reject>(*m) ? std::get<wire::Reject>(*m).code
                                                         : wire::RejectCode::protocol;
  }

  // A setup for port 1 of mlx5_0.
  static wire::Setup valid_setup() {
    wire::Setup s;
    s.op = Op::write;
    s.size = 64;
    s.peer.qpn = 17;
    s.device = "mlx5_0";
    s.port = 1;
    return s;
  }
  // The same, made for the address `s` is connected to.
  static wire::Setup valid_setup(const tcp::socket& s) {
    wire::Setup setup = valid_setup();
    setup.nonce = random_nonce();
    setup.dialled = dialled_of(s, Side::remote);
    return setup;
  }

  static std::string reject_reason(const std::optional<wire::Message>& m) {
    EXPECT_TRUE(m && std::holds_alternative<wire::Reject>(*m));
    return m && std::holds_alternative<wire::Reject>(*m) ? std::get<wire::Reject>(*m).reason : "";
  }

  // Waits (bounded) until the responder's session count is `n`.
  void wait_sessions(int n) {
    for (int i = 0; i < 500; ++i) {
      if (sample(metrics_of(*stats_), "rdma_probe_responder_sessions") == n) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "sessions never reached " << n;
  }
};

TEST_F(ResponderTest, GarbageClientIsRefusedAndCounted) {
  start({});
  auto s = connect();
  auto hello = read_message(s);
  ASSERT_TRUE(hello && std::holds_alternative<wire::Hello>(*hello));
  EXPECT_FALSE(std::get<wire::Hello>(*hello).auth_required());
  boost::asio::write(s, boost::asio::buffer(std::string("GET / HTTP/1.1\r\nHost: x\r\n\r\n")));
  EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::protocol);
  EXPECT_TRUE(closed_by_peer(s));
  wait_sessions(0);
  EXPECT_EQ(rejected("protocol"), 1);
}

TEST_F(ResponderTest, OtherProtocolVersionIsToldSo) {
  start({});
  auto s = connect();
  read_message(s);
  // A version 1 prober's setup header.
  const std::vector<uint8_t> v1 = {'R', 'X', 'P', 1, 2, 0, 0, 79};
  boost::asio::write(s, boost::asio::buffer(v1));
  const auto answer = read_message(s);
  EXPECT_EQ(reject_code(answer), wire::RejectCode::version);
  EXPECT_EQ(reject_reason(answer), "protocol version 1 not spoken (this is 3)");
  EXPECT_EQ(rejected("version"), 1);
}

// A hello's bytes as sent: the responder speaks version 3, and without an
// RDMA port lists none.
TEST_F(ResponderTest, HelloWithoutPortsListsNone) {
  start({});
  auto s = connect();
  std::array<uint8_t, wire::kHeaderSize + 18> bytes{};
  boost::asio::read(s, boost::asio::buffer(bytes));
  EXPECT_EQ((std::vector<uint8_t>(bytes.begin(), bytes.begin() + 8)),
            (std::vector<uint8_t>{'R', 'X', 'P', 3, 1, 0, 0, 18}));
  EXPECT_EQ(bytes[8 + 16], 0);  // no key ids: no authentication
  EXPECT_EQ(bytes[8 + 17], 0);  // no ports
  // set_ports with none changes nothing.
  boost::asio::post(io_, [this] { responder_->set_ports({}); });
  auto again = connect();
  auto hello = read_message(again);
  ASSERT_TRUE(hello && std::holds_alternative<wire::Hello>(*hello));
  EXPECT_TRUE(std::get<wire::Hello>(*hello).ports.empty());
}

TEST_F(ResponderTest, MessagesOutOfOrderAreRefused) {
  start({});
  auto s = connect();
  read_message(s);
  boost::asio::write(s, boost::asio::buffer(wire::encode(wire::Keepalive{})));
  EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::protocol);
}

TEST_F(ResponderTest, SetupWithoutDeviceIsRefusedWithResources) {
  start({});
  {
    auto s = connect();
    read_message(s);
    boost::asio::write(s, boost::asio::buffer(wire::encode(valid_setup())));
    const auto answer = read_message(s);
    EXPECT_EQ(reject_code(answer), wire::RejectCode::resources);
    EXPECT_EQ(reject_reason(answer), "no RDMA device");
    EXPECT_TRUE(closed_by_peer(s));
  }
  // A setup that names a rail instead of a device: the same.
  auto s = connect();
  read_message(s);
  wire::Setup by_rail = valid_setup();
  by_rail.device = "";
  by_rail.rail = "192.168.100.0/24";
  boost::asio::write(s, boost::asio::buffer(wire::encode(by_rail)));
  const auto answer = read_message(s);
  EXPECT_EQ(reject_code(answer), wire::RejectCode::resources);
  EXPECT_EQ(reject_reason(answer), "no RDMA device");
  EXPECT_EQ(rejected("resources"), 2);
}

// A version 1 setup (no device, port or rail) under a version 3 header is
// malformed.
TEST_F(ResponderTest, SetupWithoutAPortIsAProtocolError) {
  start({});
  auto s = connect();
  read_message(s);
  wire::Setup none = valid_setup();
  none.device = "";
  auto bytes = wire::encode(none);
  ASSERT_EQ(bytes[7], 116);  // 47 + 3 + 16 + 18 + 32
  boost::asio::write(s, boost::asio::buffer(bytes));
  const auto answer = read_message(s);
  EXPECT_EQ(reject_code(answer), wire::RejectCode::protocol);
  EXPECT_EQ(reject_reason(answer), "setup: names neither a device nor a rail");
  EXPECT_EQ(rejected("protocol"), 1);
}

TEST_F(ResponderTest, OversizedMessagesAreNotOffered) {
  ResponderSettings rs;
  rs.limits.max_message_size = 4096;
  start(rs);
  auto s = connect();
  read_message(s);
  wire::Setup big = valid_setup();
  big.size = 1 << 30;
  boost::asio::write(s, boost::asio::buffer(wire::encode(big)));
  EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::unsupported);
}

TEST_F(ResponderTest, WrongSecretIsRefusedRightOneGetsThrough) {
  const std::string secret = "the-shared-probe-secret";
  ResponderSettings rs;
  rs.keyring = std::make_shared<Keyring>(secret);
  start(rs);
  {
    auto s = connect();
    auto hello = read_message(s);
    ASSERT_TRUE(hello && std::get<wire::Hello>(*hello).auth_required());
    EXPECT_EQ(std::get<wire::Hello>(*hello).keys, std::vector<wire::KeyId>{key_id(secret)});
    wire::Setup setup = valid_setup(s);
    setup.mac = setup_mac("a-wrong-secret-of-length", std::get<wire::Hello>(*hello).nonce, setup);
    boost::asio::write(s, boost::asio::buffer(wire::encode(setup)));
    EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::auth);
  }
  {
    // No MAC at all.
    auto s = connect();
    read_message(s);
    boost::asio::write(s, boost::asio::buffer(wire::encode(valid_setup(s))));
    EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::auth);
  }
  {
    // A MAC for another nonce (a replayed set-up).
    auto s = connect();
    read_message(s);
    wire::Setup setup = valid_setup(s);
    setup.mac = setup_mac(secret, random_nonce(), setup);
    boost::asio::write(s, boost::asio::buffer(wire::encode(setup)));
    EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::auth);
  }
  EXPECT_EQ(rejected("auth"), 3);
  auto s = connect();
  auto hello = read_message(s);
  wire::Setup setup = valid_setup(s);
  setup.mac = setup_mac(secret, std::get<wire::Hello>(*hello).nonce, setup);
  boost::asio::write(s, boost::asio::buffer(wire::encode(setup)));
  // Authenticated: refused only for want of a device here.
  EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::resources);
}

// A relay between a prober and a real responder (a target list entry that
// points at the relay) passes the responder's hello and the prober's signed
// set-up through: the set-up names the relay's address, so the responder
// refuses it, with or without the prober knowing the secret.
TEST_F(ResponderTest, ASetUpRelayedFromAnotherAddressIsRefused) {
  const std::string secret = "the-shared-probe-secret";
  ResponderSettings rs;
  rs.keyring = std::make_shared<Keyring>(secret);
  start(rs);
  // The relay listens on 127.0.0.2 and forwards whole messages.
  tcp::acceptor relay(client_io_, tcp::endpoint(boost::asio::ip::make_address("127.0.0.2"), 0));
  const auto relay_address = relay.local_endpoint();
  for (const bool knows_secret : {true, false}) {
    tcp::socket prober(client_io_);
    prober.connect(relay_address);
    tcp::socket relayed = relay.accept();
    auto upstream = connect();
    // Responder -> relay -> prober: the hello.
    auto hello = read_message(upstream);
    ASSERT_TRUE(hello);
    boost::asio::write(relayed, boost::asio::buffer(wire::encode(*hello)));
    auto seen = read_message(prober);
    ASSERT_TRUE(seen && std::holds_alternative<wire::Hello>(*seen));
    // The prober signs for the address it dialled: the relay's.
    wire::Setup setup = valid_setup(prober);
    EXPECT_EQ(setup.dialled.port, relay_address.port());
    setup.mac = setup_mac(knows_secret ? secret : std::string("a-wrong-secret-of-length"),
                          std::get<wire::Hello>(*seen).nonce, setup);
    boost::asio::write(prober, boost::asio::buffer(wire::encode(setup)));
    auto forwarded = read_message(relayed);
    ASSERT_TRUE(forwarded);
    boost::asio::write(upstream, boost::asio::buffer(wire::encode(*forwarded)));
    const auto answer = read_message(upstream);
    EXPECT_EQ(reject_code(answer), wire::RejectCode::auth);
    EXPECT_EQ(reject_reason(answer),
              knows_secret ? "the set-up was made for another address" : "authentication failed");
  }
  EXPECT_EQ(rejected("relayed"), 1);
  EXPECT_EQ(rejected("auth"), 1);
  // The same prober's set-up made for the responder's own address passes
  // authentication (refused only for want of a device).
  auto s = connect();
  auto hello = read_message(s);
  wire::Setup setup = valid_setup(s);
  setup.mac = setup_mac(secret, std::get<wire::Hello>(*hello).nonce, setup);
  boost::asio::write(s, boost::asio::buffer(wire::encode(setup)));
  EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::resources);
}

// A full handshake budget makes room for a newcomer by ending the oldest
// handshake; the session caps are taken at authentication
// (probe_admission_test.cpp).
TEST_F(ResponderTest, AFullHandshakeBudgetEndsTheOldest) {
  ResponderSettings rs;
  rs.limits.max_handshakes = 2;
  start(rs);
  auto a = connect();
  auto b = connect();
  read_message(a);
  read_message(b);
  wait_sessions(2);
  auto c = connect();
  auto hello = read_message(c);
  EXPECT_TRUE(hello && std::holds_alternative<wire::Hello>(*hello));
  EXPECT_TRUE(closed_by_peer(a));
  wait_sessions(2);
  EXPECT_EQ(rejected("handshake_evicted"), 1);
  EXPECT_EQ(rejected("capacity"), 0);
}

TEST_F(ResponderTest, SetupRateIsLimitedPerSource) {
  ResponderSettings rs;
  rs.limits.setups_per_minute_per_source = 3;
  start(rs);
  for (int i = 0; i < 3; ++i) {
    auto s = connect();
    auto hello = read_message(s);
    EXPECT_TRUE(hello && std::holds_alternative<wire::Hello>(*hello)) << i;
  }
  auto s = connect();
  EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::rate);
  EXPECT_EQ(rejected("rate"), 1);
}

TEST_F(ResponderTest, SilentClientIsDroppedAfterTheHandshakeTimeout) {
  ResponderSettings rs;
  rs.limits.handshake_timeout = std::chrono::milliseconds(100);
  start(rs);
  auto s = connect();
  read_message(s);
  EXPECT_TRUE(closed_by_peer(s));
  wait_sessions(0);
  EXPECT_EQ(rejected("handshake_timeout"), 1);
}

TEST_F(ResponderTest, ThousandsOfConnectionsLeaveNothingBehind) {
  ResponderSettings rs;
  rs.limits.setups_per_minute_per_source = 1000000;
  start(rs);
  for (int i = 0; i < 2000; ++i) {
    auto s = connect();
    if (i % 2 == 0) {
      read_message(s);
      boost::asio::write(s, boost::asio::buffer(wire::encode(valid_setup())));
      read_message(s);
    }
  }
  // Connections are admitted in order: once this one is answered, every
  // earlier one has been admitted.
  auto last = connect();
  read_message(last);
  last.close();
  wait_sessions(0);
  std::promise<std::size_t> held;
  boost::asio::post(io_, [&] { held.set_value(responder_->sessions()); });
  EXPECT_EQ(held.get_future().get(), 0u);
  EXPECT_EQ(rejected("resources"), 1000);
}

// A port on 127.0.0.1 nothing listens on.
std::string closed_port() {
  boost::asio::io_context io;
  tcp::acceptor a(io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  const unsigned short port = a.local_endpoint().port();
  a.close();
  return "127.0.0.1:" + std::to_string(port);
}

// Discovery against real listeners on 127.0.0.1, everything on one event
// loop that the test runs until the handlers have been called.
class ProbeDiscoveryTest : public ::testing::Test {
 protected:
  struct Event {
    bool answered = false;
    std::vector<wire::PortAd> ports;
    std::string reason;
    std::string detail;
  };

  static DiscoverySettings fast() {
    DiscoverySettings s;
    s.interval = std::chrono::milliseconds(1);
    s.backoff_initial = std::chrono::milliseconds(1);
    s.backoff_max = std::chrono::milliseconds(2);
    return s;
  }

  // Discovers `address` until `n` answers or failures have been reported,
  // then stops it.
  std::vector<Event> discover(const std::string& address, std::size_t n,
                              DiscoverySettings settings = fast()) {
    std::vector<Event> events;
    std::shared_ptr<Discovery> d;
    Discovery::Handlers h;
    h.ports = [&](std::vector<wire::PortAd> ports) {
      events.push_back({true, std::move(ports), "", ""});
      if (events.size() == n) d->stop();
    };
    h.failed = [&](const char* why, const std::string& detail) {
      events.push_back({false, {}, why, detail});
      if (events.size() == n) d->stop();
    };
    d = std::make_shared<Discovery>(io_, address, settings, std::move(h));
    d->start();
    run_until([&] { return events.size() >= n; });
    d->stop();
    EXPECT_EQ(events.size(), n);
    return events;
  }

  // Runs the loop's handlers one at a time until `done()`; a bound against
  // hanging, not a timing.
  template <typename Done>
  void run_until(Done done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done()) {
      io_.restart();
      if (io_.run_one_until(deadline) == 0 && std::chrono::steady_clock::now() >= deadline) {
        ADD_FAILURE() << "gave up waiting";
        return;
      }
    }
  }

  // A listener that answers every connection with `answer` and then closes
  // it, or keeps it open saying nothing more when `keep` is set.
  std::string serve(std::vector<uint8_t> answer, bool keep = false) {
    acceptor_.open(tcp::v4());
    acceptor_.bind(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    acceptor_.listen();
    answer_ = std::move(answer);
    keep_ = keep;
    accept();
    return "127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }

  void accept() {
    acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket s) {
      if (ec) return;
      auto socket = std::make_shared<tcp::socket>(std::move(s));
      boost::asio::async_write(*socket, boost::asio::buffer(answer_),
                               [this, socket](const boost::system::error_code&, std::size_t) {
                                 if (keep_) {
                                   kept_.push_back(socket);
                                 } else {
                                   boost::system::error_code ignored;
                                   socket->shutdown(tcp::socket::shutdown_both, ignored);
                                   socket->close(ignored);
                                 }
                               });
      accept();
    });
  }

  boost::asio::io_context io_;
  tcp::acceptor acceptor_{io_};
  std::vector<uint8_t> answer_;
  bool keep_ = false;
  std::vector<std::shared_ptr<tcp::socket>> kept_;
};

// A responder on a host without RDMA answers discovery with a hello that
// lists no ports; discovery asks again after its interval.
TEST_F(ProbeDiscoveryTest, AResponderWithoutRdmaListsNoPorts) {
  auto stats = std::make_shared<ProbeStats>();
  ResponderSettings rs;
  rs.listen_address = "127.0.0.1:0";
  Responder responder(io_, rs, stats);
  ASSERT_TRUE(responder.start());
  const auto events = discover("127.0.0.1:" + std::to_string(responder.port()), 2);
  ASSERT_EQ(events.size(), 2u);
  for (const auto& e : events) {
    EXPECT_TRUE(e.answered) << e.reason << ": " << e.detail;
    EXPECT_TRUE(e.ports.empty());
  }
  // Reading the hello and leaving is not a misbehaving client.
  run_until([&] { return responder.sessions() == 0; });
  EXPECT_FALSE(has_family(metrics_of(*stats), "rdma_probe_responder_rejected_total"));
  responder.stop();
}

TEST_F(ProbeDiscoveryTest, TheTargetsPortsAreReportedAsListed) {
  wire::Hello hello;
  wire::PortAd roce;
  roce.device = "mlx5_0";
  roce.port = 1;
  roce.ethernet = true;
  roce.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 100, 7};
  roce.rail = "192.168.100.0/24";
  wire::PortAd ib;
  ib.device = "mlx5_1";
  ib.port = 2;
  ib.ethernet = false;
  ib.gid = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x02, 0xc9, 0x03, 0, 0x12, 0x34, 0x56};
  ib.rail = "fe80::/64";
  hello.ports = {roce, ib};
  const auto events = discover(serve(wire::encode(hello)), 1);
  ASSERT_EQ(events.size(), 1u);
  ASSERT_TRUE(events[0].answered) << events[0].reason << ": " << events[0].detail;
  EXPECT_EQ(events[0].ports, (std::vector<wire::PortAd>{roce, ib}));
}

TEST_F(ProbeDiscoveryTest, AClosedPortIsRefusedAndAskedAgain) {
  const auto events = discover(closed_port(), 2);
  ASSERT_EQ(events.size(), 2u);
  for (const auto& e : events) {
    EXPECT_FALSE(e.answered);
    EXPECT_EQ(e.reason, "refused");
    EXPECT_EQ(e.detail, "connecting: Connection refused");
  }
}

TEST_F(ProbeDiscoveryTest, SomethingElseOnThePortIsAProtocolError) {
  const auto events =
      discover(serve(std::vector<uint8_t>{'H', 'T', 'T', 'P', '/', '1', '.', '1', ' ', '4', '0',
                                          '0', '\r', '\n', '\r', '\n'}),
               1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_FALSE(events[0].answered);
  EXPECT_EQ(events[0].reason, "protocol");
  EXPECT_EQ(events[0].detail, "not a probe control message (bad magic)");
}

TEST_F(ProbeDiscoveryTest, AMessageOtherThanAHelloIsAProtocolError) {
  const auto events = discover(serve(wire::encode(wire::Keepalive{})), 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, "protocol");
  EXPECT_EQ(events[0].detail, "expected a hello");
}

TEST_F(ProbeDiscoveryTest, AnOlderProbeIsAProtocolError) {
  // A version 1 hello: nonce and flags.
  std::vector<uint8_t> v1 = {'R', 'X', 'P', 1, 1, 0, 0, 17};
  v1.resize(8 + 17);
  const auto events = discover(serve(v1), 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, "protocol");
  EXPECT_EQ(events[0].detail, "protocol version 1 not spoken (this is 3)");
}

TEST_F(ProbeDiscoveryTest, AVersion2ProbeIsAProtocolError) {
  // A version 2 hello: nonce, flags and no ports.
  std::vector<uint8_t> v2 = {'R', 'X', 'P', 2, 1, 0, 0, 18};
  v2.resize(8 + 18);
  const auto events = discover(serve(v2), 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, "protocol");
  EXPECT_EQ(events[0].detail, "protocol version 2 not spoken (this is 3)");
}

TEST_F(ProbeDiscoveryTest, AResponderAtCapacityRejects) {
  auto stats = std::make_shared<ProbeStats>();
  ResponderSettings rs;
  rs.listen_address = "127.0.0.1:0";
  rs.limits.max_handshakes = 0;  // not even a handshake may start
  Responder responder(io_, rs, stats);
  ASSERT_TRUE(responder.start());
  const auto events = discover("127.0.0.1:" + std::to_string(responder.port()), 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, "rejected");
  EXPECT_EQ(events[0].detail, "refused: capacity");
  responder.stop();
}

TEST_F(ProbeDiscoveryTest, ClosedWithoutAWordIsDisconnected) {
  const auto events = discover(serve({}), 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, "disconnected");
  EXPECT_EQ(events[0].detail, "control connection: connection closed by peer");
}

TEST_F(ProbeDiscoveryTest, NoHelloWithinTheConnectTimeout) {
  DiscoverySettings s = fast();
  s.connect_timeout = std::chrono::milliseconds(50);
  // Half a hello, then silence.
  const auto events = discover(serve({'R', 'X', 'P', 2}, true), 1, s);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, "connect_timeout");
  EXPECT_EQ(events[0].detail, "no hello within the connect timeout");
}

TEST_F(ProbeDiscoveryTest, AnAddressThatIsNotHostPortIsUnreachable) {
  for (const char* address : {"no-port", ":10911"}) {
    const auto events = discover(address, 1);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].reason, "unreachable");
    EXPECT_EQ(events[0].detail, "target address is not host:port");
  }
}

// The service asks every target for its ports: its own responder (the
// loopback target) answers with none when no port is used; a port nothing
// listens on is refused. Targets dropped from the configuration stop being
// exported.
TEST(ProbeServiceTest, TargetsAreDiscoveredAndReported) {
  ProbeOptions o;
  o.enabled = true;
  o.listen_address = "127.0.0.1:0";
  o.loopback = true;
  // No port of this host is used, RDMA or not: the hello lists none.
  o.device = "rdma_exporter_test_no_such_device";
  const std::string closed = closed_port();
  o.targets = {Target{closed, {{"rack", "r1"}}, {}, ""}};
  o.backoff_initial = std::chrono::milliseconds(10);
  o.backoff_max = std::chrono::milliseconds(20);
  ProbeService service(o);
  ASSERT_TRUE(service.start());
  const auto snapshot = [&] {
    MetricSink sink;
    service.collect(sink);
    Snapshot snap;
    snap.families = sink.take();
    return snap;
  };
  const Labels loopback = {{"target", "loopback"}};
  const Labels refused = {{"target", closed}, {"rack", "r1"}};
  Labels refused_errors = refused;
  refused_errors.emplace_back("reason", "refused");
  ASSERT_TRUE(rdma_exporter::testing::eventually([&] {
    const Snapshot s = snapshot();
    return sample(s, "rdma_probe_target_up", loopback) == 1 &&
           sample(s, "rdma_probe_discovery_errors_total", refused_errors) >= 1;
  }));
  Snapshot snap = snapshot();
  EXPECT_EQ(sample(snap, "rdma_probe_target_ports", loopback), 0);
  EXPECT_EQ(sample(snap, "rdma_probe_target_up", refused), 0);
  EXPECT_EQ(sample(snap, "rdma_probe_target_ports", refused), 0);
  // No port to probe from, so no probe series.
  EXPECT_FALSE(has_family(snap, "rdma_probe_sent_total"));

  o.targets.clear();
  service.update(o);
  service.settle();
  snap = snapshot();
  EXPECT_EQ(series_count(snap, "rdma_probe_target_up"), 1u);
  EXPECT_EQ(sample(snap, "rdma_probe_target_up", loopback), 1);
  EXPECT_EQ(series_count(snap, "rdma_probe_discovery_errors_total"), 0u);
  service.stop();
}

}  // namespace
}  // namespace rdma_exporter::probe
