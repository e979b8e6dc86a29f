// exporter/probe/options: the `probe` section: defaults, parsing and validation, worded exactly.

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
}  // namespace
}  // namespace rdma_exporter::probe
