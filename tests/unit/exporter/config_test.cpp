#include "exporter/config.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "collectors/dcb/options.hpp"
#include "collectors/ethtool/options.hpp"
#include "collectors/hw_counters/options.hpp"
#include "collectors/optional_counters/options.hpp"
#include "collectors/qp_counters/options.hpp"
#include "exporter/cli.hpp"

namespace rdma_exporter {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

// The defaults as docs/configuration.md states them, written out by hand.
void expect_documented_defaults(const Config& c) {
  EXPECT_EQ(c.web.listen_addresses, std::vector<std::string>{":10910"});
  EXPECT_EQ(c.web.telemetry_path, "/metrics");
  EXPECT_EQ(c.web.max_connections, 64);
  EXPECT_EQ(c.web.max_connections_per_source, 16);
  EXPECT_EQ(c.web.header_timeout, seconds(5));
  EXPECT_EQ(c.web.read_timeout, seconds(10));
  EXPECT_EQ(c.web.idle_timeout, seconds(60));
  EXPECT_EQ(c.web.write_timeout, seconds(30));
  EXPECT_EQ(c.web.max_request_bytes, 8192U);
  EXPECT_FALSE(c.web.enable_lifecycle);
  EXPECT_EQ(c.web.config_file, "");
  EXPECT_EQ(c.collection.max_age, seconds(1));
  EXPECT_EQ(c.collection.netlink_timeout, seconds(5));
  EXPECT_TRUE(c.devices.include.empty());
  EXPECT_TRUE(c.devices.exclude.empty());
  EXPECT_EQ(c.sysfs.root, "/sys");
  EXPECT_TRUE(c.collectors.enabled("devices"));
  EXPECT_TRUE(c.collectors.enabled("hw_counters"));
  EXPECT_TRUE(c.collectors.enabled("resources"));
  EXPECT_TRUE(c.collectors.enabled("sysfs"));
  EXPECT_TRUE(c.collectors.enabled("qp_counters"));
  EXPECT_TRUE(c.collectors.enabled("optional_counters"));
  EXPECT_TRUE(c.collectors.enabled("ethtool"));
  EXPECT_TRUE(c.collectors.enabled("dcb"));
  EXPECT_EQ(c.log.level, "info");

  EXPECT_EQ(c.collectors.options<HwCountersOptions>().source, HwCountersOptions::Source::automatic);
  EXPECT_TRUE(c.collectors.options<QpCountersOptions>().ports.empty());
  EXPECT_TRUE(c.collectors.options<QpCountersOptions>().manual_rules.empty());
  EXPECT_EQ(c.collectors.options<QpCountersOptions>().reconcile_interval, seconds(10));
  EXPECT_FALSE(c.collectors.options<QpCountersOptions>().cgroup_label);
  EXPECT_TRUE(c.collectors.options<QpCountersOptions>().aggregate_by.empty());
  EXPECT_EQ(c.collectors.options<QpCountersOptions>().max_series, 1000U);
  EXPECT_EQ(c.collectors.options<QpCountersOptions>().retired_ttl, minutes(10));
  EXPECT_FALSE(c.collectors.options<QpCountersOptions>().inventory_by_comm);
  EXPECT_FALSE(c.collectors.options<QpCountersOptions>().inventory_by_pod);
  EXPECT_EQ(c.collectors.options<QpCountersOptions>().proc_root, "/proc");

  EXPECT_TRUE(c.collectors.options<OptionalCountersOptions>().ports.empty());
  EXPECT_EQ(c.collectors.options<OptionalCountersOptions>().reconcile_interval, seconds(10));
  EXPECT_FALSE(c.collectors.options<EthtoolOptions>().raw_stats);
  EXPECT_TRUE(c.collectors.options<EthtoolOptions>().raw_stats_include.empty());
  EXPECT_TRUE(c.collectors.options<EthtoolOptions>().mappings.empty());
  EXPECT_FALSE(c.collectors.options<DcbOptions>().dscp_priority);

  EXPECT_FALSE(c.otlp.enabled);
  EXPECT_EQ(c.otlp.endpoint, "http://127.0.0.1:4318/v1/metrics");
  EXPECT_EQ(c.otlp.encoding, OtlpOptions::Encoding::protobuf);
  EXPECT_EQ(c.otlp.compression, OtlpOptions::Compression::none);
  EXPECT_TRUE(c.otlp.headers.empty());
  EXPECT_EQ(c.otlp.interval, seconds(60));
  EXPECT_EQ(c.otlp.timeout, seconds(10));
  EXPECT_EQ(c.otlp.max_backoff, seconds(30));
  EXPECT_EQ(c.otlp.queue_size, 8U);
  EXPECT_EQ(c.otlp.service_name, "rdma_exporter");
  EXPECT_TRUE(c.otlp.resource_attributes.empty());

  EXPECT_FALSE(c.kubernetes.enabled);
  EXPECT_EQ(c.kubernetes.cri_socket, "");
  EXPECT_EQ(c.kubernetes.pod_resources_socket, "/var/lib/kubelet/pod-resources/kubelet.sock");
  EXPECT_EQ(c.kubernetes.refresh_interval, seconds(30));
  EXPECT_EQ(c.kubernetes.timeout, seconds(2));

  const auto& p = c.probe;
  EXPECT_FALSE(p.enabled);
  EXPECT_EQ(p.device, "");          // every device
  EXPECT_EQ(p.port, std::nullopt);  // every port
  EXPECT_EQ(p.link_layer, "");      // both
  EXPECT_EQ(p.gid_index, -1);
  EXPECT_TRUE(p.rails.empty());  // rails from GID subnets
  EXPECT_FALSE(p.cross_rail);
  EXPECT_EQ(p.discovery_interval, seconds(30));
  EXPECT_EQ(p.listen_address, ":10911");
  EXPECT_TRUE(p.classes.empty());  // in use: one class "default"
  EXPECT_TRUE(p.targets.empty());
  EXPECT_TRUE(p.file_sd.empty());
  EXPECT_EQ(p.file_sd_refresh, seconds(5));
  EXPECT_FALSE(p.loopback);
  EXPECT_EQ(p.connect_timeout, seconds(3));
  EXPECT_EQ(p.backoff_initial, milliseconds(500));
  EXPECT_EQ(p.backoff_max, seconds(30));
  EXPECT_EQ(p.secret_file, "");
  EXPECT_EQ(p.responder.max_sessions, 1024);
  EXPECT_EQ(p.responder.max_sessions_per_source, 128);
  EXPECT_EQ(p.responder.setups_per_minute_per_source, 120);
  EXPECT_EQ(p.responder.max_message_size, 1048576U);
  EXPECT_EQ(p.responder.idle_timeout, seconds(60));
  EXPECT_EQ(p.memory, "host");
}

TEST(Config, WithoutAFileTheDocumentedDefaultsApply) {
  expect_documented_defaults(Config{});
}

TEST(Config, ShippedExampleLoadsAndHoldsTheDocumentedDefaults) {
  Config c;
  c.web.max_connections = 1;  // the file sets every key: nothing survives from before
  c.web.max_connections_per_source = 1;
  c.web.header_timeout = seconds(1);
  c.sysfs.root = "/elsewhere";
  c.collectors.options<QpCountersOptions>().max_series = 1;
  c.collectors.options<HwCountersOptions>().source = HwCountersOptions::Source::sysfs;
  c.probe.memory = "udmabuf";
  auto errors = load_config_file(RDMA_EXPORTER_SOURCE_DIR "/config/rdma_exporter.yml", c);
  ASSERT_TRUE(errors.empty()) << errors.front();
  expect_documented_defaults(c);
}

TEST(Config, EmptyDocumentKeepsDefaults) {
  Config c;
  EXPECT_TRUE(parse_config("", "t.yml", c).empty());
  EXPECT_TRUE(parse_config("# only a comment\n", "t.yml", c).empty());
  EXPECT_EQ(c.web.listen_addresses, std::vector<std::string>{":10910"});
}

TEST(Config, BytesThatAreNotTextAreAnErrorNotAnEmptyDocument) {
  Config c;
  c.web.telemetry_path = "/kept";
  // yaml-cpp alone loads this as an empty document, which keeps the defaults.
  const auto errors = parse_config("%\x7f\x03junk", "t.yml", c);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0],
            "t.yml:1:2: (syntax): character U+007F is not allowed in YAML: not a text file");
  EXPECT_EQ(c.web.telemetry_path, "/kept");
}

TEST(Config, KubernetesSection) {
  Config c;
  auto errors = parse_config(R"(
kubernetes:
  enabled: true
  cri_socket: /run/k3s/containerd/containerd.sock
  pod_resources_socket: /var/lib/k0s/kubelet/pod-resources/kubelet.sock
  refresh_interval: 45s
  timeout: 1500ms
)",
                             "t.yml", c);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_TRUE(c.kubernetes.enabled);
  EXPECT_EQ(c.kubernetes.cri_socket, "/run/k3s/containerd/containerd.sock");
  EXPECT_EQ(c.kubernetes.pod_resources_socket, "/var/lib/k0s/kubelet/pod-resources/kubelet.sock");
  EXPECT_EQ(c.kubernetes.refresh_interval, seconds(45));
  EXPECT_EQ(c.kubernetes.timeout, milliseconds(1500));

  Config bad;
  errors = parse_config(R"(
kubernetes:
  cri_socket: run/containerd.sock
  refresh_interval: 500ms
  timeout: 0s
  socket: /x
)",
                        "t.yml", bad);
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_NE(errors[0].find("t.yml:6:3: kubernetes.socket: unknown key"), std::string::npos)
      << errors[0];
  EXPECT_EQ(errors[1],
            "t.yml: kubernetes.cri_socket: expected an absolute path, got \"run/containerd.sock\"");
  EXPECT_EQ(errors[2], "t.yml: kubernetes.refresh_interval: must be at least 1s");
  EXPECT_EQ(errors[3], "t.yml: kubernetes.timeout: must be positive and at most refresh_interval");
}

TEST(Config, ValuesAreApplied) {
  Config c;
  auto errors = parse_config(R"(
web:
  listen_address: "127.0.0.1:9999"
  max_connections: 3
  max_connections_per_source: 2
  header_timeout: 750ms
  read_timeout: 1m30s
collection:
  max_age: 500ms
devices:
  include: ["mlx5_.*"]
  exclude: [mlx5_3]
sysfs: {root: /host/sys}
collectors: {resources: false}
log: {level: debug}
)",
                             "t.yml", c);
  ASSERT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(c.web.listen_addresses, std::vector<std::string>{"127.0.0.1:9999"});
  EXPECT_EQ(c.web.max_connections, 3);
  EXPECT_EQ(c.web.max_connections_per_source, 2);
  EXPECT_EQ(c.web.header_timeout, std::chrono::milliseconds(750));
  EXPECT_EQ(c.web.read_timeout, std::chrono::seconds(90));
  EXPECT_EQ(c.collection.max_age, std::chrono::milliseconds(500));
  EXPECT_EQ(c.devices.include, std::vector<std::string>{"mlx5_.*"});
  EXPECT_EQ(c.devices.exclude, std::vector<std::string>{"mlx5_3"});
  EXPECT_EQ(c.sysfs.root, "/host/sys");
  EXPECT_FALSE(c.collectors.enabled("resources"));
  EXPECT_TRUE(c.collectors.enabled("sysfs"));
  EXPECT_EQ(c.log.level, "debug");
}

TEST(Config, EveryProblemIsReportedWithLineColumnAndKey) {
  Config c;
  auto errors = parse_config(R"(web:
  max_connections: lots
  listen_adress: ":1"
collection:
  max_age: soon
devices:
  include: ["mlx5_[", ok]
colectors: {}
log: {level: chatty}
)",
                             "bad.yml", c);
  ASSERT_EQ(errors.size(), 6U) << ::testing::PrintToString(errors);
  EXPECT_EQ(errors[0].rfind("bad.yml:2:20: web.max_connections: expected an integer", 0), 0U)
      << errors[0];
  EXPECT_EQ(errors[1].rfind("bad.yml:3:3: web.listen_adress: unknown key (expected one of:", 0), 0U)
      << errors[1];
  EXPECT_EQ(errors[2].rfind("bad.yml:5:12: collection.max_age: expected a duration", 0), 0U)
      << errors[2];
  EXPECT_EQ(errors[3].rfind("bad.yml:7:13: devices.include: invalid device pattern", 0), 0U)
      << errors[3];
  EXPECT_EQ(errors[4].rfind("bad.yml:8:1: colectors: unknown key", 0), 0U) << errors[4];
  EXPECT_EQ(errors[5], "bad.yml: log.level: expected debug, info, warn or error, got \"chatty\"");
}

TEST(Config, CongestionSections) {
  Config c;
  auto errors = parse_config(R"yaml(
collectors: {optional_counters: false, ethtool: true, dcb: false}
optional_counters:
  ports:
    - {device: "mlx5_.*", port: 1, enable: [cc_rx_ce_pkts, cc_tx_cnp_pkts], own: true}
  reconcile_interval: 1m
ethtool:
  raw_stats: true
  raw_stats_include: ["rx_prio.*"]
  mappings:
    - driver: ionic
      stat: "rx_pfc_pri([0-7])"
      metric: pfc_pause_frames
      direction: rx
    - stat: "rx_wait_us"
      metric: discards
      reason: wait
      scale: 1e-6
dcb: {dscp_priority: true}
)yaml",
                             "t.yml", c);
  ASSERT_TRUE(errors.empty()) << errors.front();
  EXPECT_FALSE(c.collectors.enabled("optional_counters"));
  EXPECT_FALSE(c.collectors.enabled("dcb"));
  ASSERT_EQ(c.collectors.options<OptionalCountersOptions>().ports.size(), 1U);
  const auto& r = c.collectors.options<OptionalCountersOptions>().ports[0];
  EXPECT_EQ(r.device, "mlx5_.*");
  EXPECT_EQ(r.port, 1U);
  EXPECT_EQ(r.enable, (std::vector<std::string>{"cc_rx_ce_pkts", "cc_tx_cnp_pkts"}));
  EXPECT_TRUE(r.own);
  EXPECT_EQ(c.collectors.options<OptionalCountersOptions>().reconcile_interval,
            std::chrono::minutes(1));
  EXPECT_TRUE(c.collectors.options<EthtoolOptions>().raw_stats);
  ASSERT_EQ(c.collectors.options<EthtoolOptions>().mappings.size(), 2U);
  EXPECT_EQ(c.collectors.options<EthtoolOptions>().mappings[0].driver, "ionic");
  EXPECT_EQ(c.collectors.options<EthtoolOptions>().mappings[1].driver, ".*");
  EXPECT_DOUBLE_EQ(c.collectors.options<EthtoolOptions>().mappings[1].scale, 1e-6);
  EXPECT_TRUE(c.collectors.options<DcbOptions>().dscp_priority);
}

TEST(Config, CongestionSectionProblems) {
  Config c;
  auto errors = parse_config(R"yaml(optional_counters:
  ports: [{enable: ["cc_rx_ce_pkts,cc_tx_cnp_pkts"], owns: true}]
  reconcile_interval: 0s
ethtool:
  mappings:
    - {stat: "rx_prio_pause", metric: pfc_pause_frames, direction: rx}
    - {stat: "x", metric: pauses}
    - {stat: "x", metric: discards, reason: r, scale: lots}
  raw_stats_include: ["("]
dcb: {dscp: true}
)yaml",
                             "c.yml", c);
  ASSERT_EQ(errors.size(), 8U) << ::testing::PrintToString(errors);
  EXPECT_NE(errors[0].find("optional_counters.ports[0].enable: expected one counter name"),
            std::string::npos)
      << errors[0];
  EXPECT_NE(errors[1].find("optional_counters.ports[0].owns: unknown key"), std::string::npos);
  EXPECT_NE(errors[2].find("c.yml:6:7: ethtool.mappings[0]: the stat pattern needs a capture"),
            std::string::npos)
      << errors[2];
  EXPECT_NE(errors[3].find("ethtool.mappings[1]: unknown metric \"pauses\""), std::string::npos)
      << errors[3];
  EXPECT_NE(errors[4].find("ethtool.mappings[2].scale: expected a number"), std::string::npos);
  EXPECT_NE(errors[5].find("ethtool.raw_stats_include"), std::string::npos) << errors[5];
  EXPECT_NE(errors[6].find("dcb.dscp: unknown key"), std::string::npos);
  EXPECT_EQ(errors[7], "c.yml: optional_counters.reconcile_interval: must be positive");
}

// web.max_request_bytes: an integer from 1024 to 1048576.
TEST(Config, MaxRequestBytesBounds) {
  auto errors_for = [](const std::string& value, Config& c) {
    return parse_config("web:\n  max_request_bytes: " + value + "\n", "m.yml", c);
  };
  for (const char* bad : {"1023", "0", "1048577"}) {
    Config c;
    const auto errors = errors_for(bad, c);
    ASSERT_EQ(errors.size(), 1U) << bad;
    EXPECT_EQ(errors[0], std::string("m.yml:2:22: web.max_request_bytes: expected an integer from "
                                     "1024 to 1048576, got \"") +
                             bad + "\"");
    EXPECT_EQ(c.web.max_request_bytes, 8192U) << bad;  // the default stays
  }
  for (const auto& [text, bytes] : {std::pair{"1024", 1024U}, {"1048576", 1048576U}}) {
    Config c;
    EXPECT_TRUE(errors_for(text, c).empty()) << text;
    EXPECT_EQ(c.web.max_request_bytes, bytes);
  }
}

TEST(Config, EmptySysfsRootIsRejected) {
  Config c;
  const auto errors = parse_config("sysfs: {root: \"\"}\n", "s.yml", c);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0], "s.yml: sysfs.root: must not be empty");
}

TEST(Config, QpCountersMaxSeriesIsAtLeastOne) {
  Config c;
  const auto errors = parse_config("qp_counters: {max_series: 0}\n", "q.yml", c);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_NE(errors[0].find("qp_counters.max_series: expected an integer from 1 to 1000000"),
            std::string::npos)
      << errors[0];
  EXPECT_EQ(c.collectors.options<QpCountersOptions>().max_series, 1000U);
  EXPECT_TRUE(parse_config("qp_counters: {max_series: 1}\n", "q.yml", c).empty());
  EXPECT_EQ(c.collectors.options<QpCountersOptions>().max_series, 1U);
}

TEST(Config, SyntaxErrorIsOneLineWithPosition) {
  Config c;
  auto errors = parse_config("web:\n  listen_address: [unclosed\n", "s.yml", c);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0].rfind("s.yml:", 0), 0U);
  EXPECT_NE(errors[0].find("(syntax)"), std::string::npos);
}

TEST(Config, WrongShapesAreErrors) {
  auto problems = [](const std::string& text) {
    Config c;
    return parse_config(text, "t", c).size();
  };
  EXPECT_EQ(problems("- a\n- b\n"), 1U);
  EXPECT_EQ(problems("web: 5\n"), 1U);
  EXPECT_EQ(problems("devices: {include: mlx5}\n"), 1U);
  EXPECT_EQ(problems("collectors: {sysfs: maybe}\n"), 1U);
  EXPECT_EQ(problems("web: {max_connections: 0}\n"), 1U);
  EXPECT_EQ(problems("web: {listen_address: nope}\n"), 1U);
  EXPECT_EQ(problems("web: {read_timeout: 0s}\n"), 1U);
  EXPECT_EQ(problems("web: {header_timeout: 0s}\n"), 1U);
  EXPECT_EQ(problems("web: {max_connections_per_source: 0}\n"), 1U);
  EXPECT_EQ(problems("web: {max_request_bytes: 99999999999}\n"), 1U);
}

TEST(Config, ProbeSectionIsRead) {
  Config c;
  auto errors = parse_config(R"(probe:
  enabled: true
  device: mlx5_0
  port: 2
  gid_index: 3
  listen_address: "10.0.0.1:10911"
  loopback: true
  secret_file: /etc/rdma_exporter/probe.secret
  memory: udmabuf
  file_sd: [/etc/rdma_exporter/peers.json]
  file_sd_refresh: 10s
  max_sessions: 10
  max_message_size: 65536
  classes:
    - {name: latency, op: send, size: 4096, tclass: 106, sl: 5, mtu: 4096,
       interval: 200ms, timeout: 50ms, busy_poll: 20us, port: 1, gid_index: 0}
    - {name: bulk, op: read, size: 65536, busy_poll: 1ms}
  targets:
    - address: "peer-a:10911"
      labels: {rack: r1}
      classes: [latency]
)",
                             "p.yml", c);
  ASSERT_TRUE(errors.empty()) << ::testing::PrintToString(errors);
  const auto& p = c.probe;
  EXPECT_TRUE(p.enabled);
  EXPECT_EQ(p.device, "mlx5_0");
  EXPECT_EQ(p.port, 2);
  EXPECT_EQ(p.gid_index, 3);
  EXPECT_TRUE(p.loopback);
  EXPECT_EQ(p.memory, "udmabuf");
  EXPECT_EQ(p.file_sd, std::vector<std::string>{"/etc/rdma_exporter/peers.json"});
  EXPECT_EQ(p.responder.max_sessions, 10);
  ASSERT_EQ(p.classes.size(), 2U);
  EXPECT_EQ(p.classes[0].op, probe::Op::send);
  EXPECT_EQ(p.classes[0].size, 4096U);
  EXPECT_EQ(p.classes[0].tclass, 106);
  EXPECT_EQ(p.classes[0].sl, 5);
  EXPECT_EQ(p.classes[0].mtu, 4096U);
  EXPECT_EQ(p.classes[0].interval, std::chrono::milliseconds(200));
  EXPECT_EQ(p.classes[0].timeout, std::chrono::milliseconds(50));
  EXPECT_EQ(p.classes[0].busy_poll, std::chrono::microseconds(20));
  EXPECT_EQ(p.classes[0].port, std::optional<uint8_t>(1));
  EXPECT_EQ(p.classes[0].gid_index, std::optional<int>(0));
  EXPECT_EQ(p.classes[1].op, probe::Op::read);
  EXPECT_EQ(p.classes[1].busy_poll, std::chrono::microseconds(1000));
  EXPECT_FALSE(p.classes[1].port);
  ASSERT_EQ(p.targets.size(), 1U);
  EXPECT_EQ(p.targets[0].labels.at("rack"), "r1");
  EXPECT_EQ(p.targets[0].classes, std::vector<std::string>{"latency"});
}

TEST(Config, ProbeProblemsAreNamed) {
  auto first_problem = [](const std::string& text) {
    Config c;
    auto errors = parse_config(text, "t", c);
    return errors.empty() ? std::string() : errors.front();
  };
  EXPECT_NE(first_problem("probe: {classes: [{name: a, op: atomic}]}").find("probe.classes[0].op"),
            std::string::npos);
  EXPECT_NE(first_problem("probe: {classes: [{name: a, size: 0}]}").find("probe.classes[0].size"),
            std::string::npos);
  EXPECT_NE(first_problem("probe: {classes: [{name: a, sl: 16}]}").find("probe.classes[0].sl"),
            std::string::npos);
  EXPECT_NE(first_problem("probe: {classes: [{name: a, busy_poll: fast}]}").find("busy_poll"),
            std::string::npos);
  EXPECT_NE(first_problem("probe: {classes: [{name: a, mtu: 1500}]}").find("mtu"),
            std::string::npos);
  EXPECT_NE(
      first_problem("probe: {targets: [{address: a:1, labels: {op: x}}]}").find("set by the probe"),
      std::string::npos);
  EXPECT_NE(first_problem("probe: {targets: [{address: nowhere}]}").find("probe.targets[0]"),
            std::string::npos);
  EXPECT_NE(first_problem("probe: {memory: gpu}").find("probe.memory"), std::string::npos);
  EXPECT_NE(first_problem("probe: {listen_address: here}").find("probe.listen_address"),
            std::string::npos);
  EXPECT_NE(first_problem("probe: {colour: red}").find("probe.colour: unknown key"),
            std::string::npos);
}

TEST(Config, MissingFileIsOneProblem) {
  Config c;
  auto errors = load_config_file("/nonexistent/rdma.yml", c);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_NE(errors[0].find("No such file"), std::string::npos);
}

TEST(Config, WebConfigFileIsResolvedAgainstTheFileAndTheFlagWins) {
  const std::string dir = ::testing::TempDir() + "rdma_cfg_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/rdma.yml";
  std::ofstream(path) << "web:\n  config_file: tls/web.yml\n";
  Config c;
  auto errors = load_config_file(path, c);
  ASSERT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(c.web.config_file, dir + "/tls/web.yml");
  std::ofstream(path) << "web:\n  config_file: /etc/web.yml\n";
  ASSERT_TRUE(load_config_file(path, c).empty());
  EXPECT_EQ(c.web.config_file, "/etc/web.yml");
  std::filesystem::remove_all(dir);

  const char* argv[] = {"rdma_exporter", "--web.config.file", "other.yml"};
  CommandLine cli;
  ASSERT_TRUE(parse_command_line(3, argv, cli).empty());
  apply_overrides(cli, c);
  EXPECT_EQ(c.web.config_file, "other.yml");  // the flag's name: against the working directory
  EXPECT_EQ(resolve_relative("", "/a/b.yml"), "");
  EXPECT_EQ(resolve_relative("c.pem", "b.yml"), "c.pem");
  EXPECT_EQ(resolve_relative("../c.pem", "/a/b/w.yml"), "/a/c.pem");
}

TEST(Config, Durations) {
  Duration d{};
  EXPECT_TRUE(parse_duration("10s", d));
  EXPECT_EQ(d, std::chrono::seconds(10));
  EXPECT_TRUE(parse_duration("1h2m3s4ms", d));
  EXPECT_EQ(d.count(), 3723004);
  for (const char* bad : {"", "10", "s", "1x", "-1s", "1.5s", "10 s"}) {
    EXPECT_FALSE(parse_duration(bad, d)) << bad;
  }
}

// Durations stop at 2^40 ms (about 34 years): a sum that would overflow,
// or wrap into a small value, is refused.
TEST(Config, DurationsAreBounded) {
  Duration d{};
  EXPECT_TRUE(parse_duration("1099511627776ms", d));
  EXPECT_EQ(d.count(), 1099511627776LL);
  EXPECT_FALSE(parse_duration("1099511627777ms", d));
  EXPECT_TRUE(parse_duration("305419h", d));  // 1,099,508,400,000 ms
  EXPECT_FALSE(parse_duration("305419h1h", d));
  EXPECT_FALSE(parse_duration("1099511627776h1099511627776h1099511627776h", d));
  EXPECT_FALSE(parse_duration("1099511627776ms1ms", d));
  Config c;
  const auto errors = parse_config(
      "collection:\n  max_age: 1099511627776h1099511627776h1099511627776h\n", "t.yml", c);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_NE(errors[0].find("collection.max_age: expected a duration"), std::string::npos)
      << errors[0];
}

// Patterns past the limits are refused with a message: too long, a repeat
// count above 1000 (also one of 19 digits, which must not wrap), nested
// repeats whose counts multiply past 1000. RE2 parses without recursion, so
// nesting itself is no danger.
TEST(Config, PatternsPastTheLimitsAreRefused) {
  const std::string deep = std::string(30000, '(') + "a" + std::string(30000, ')');
  Config c;
  auto errors = parse_config("devices:\n  include: ['" + deep + "']\n", "t.yml", c);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_NE(errors[0].find("a pattern of 60001 bytes, more than the 1024 allowed"),
            std::string::npos);
  const std::string nested511 = std::string(511, '(') + "a" + std::string(511, ')');
  errors = parse_config("devices:\n  include: ['" + nested511 + "']\n", "t.yml", c);
  EXPECT_TRUE(errors.empty()) << errors.front();
  for (const char* counted : {"a{1001}", "a{2,1001}", "a{1001,}", "\\d{3333333333333333330,3}",
                              "x{99999999999999999999999999}"}) {
    errors = parse_config(std::string("devices:\n  include: ['") + counted + "']\n", "t.yml", c);
    ASSERT_EQ(errors.size(), 1U) << counted;
    EXPECT_NE(errors[0].find("a repeat count above the 1000 allowed"), std::string::npos)
        << errors[0];
  }
  // RE2's own refusals, in its words.
  const std::pair<const char*, const char*> refused[] = {
      {"(a{40}){30}", "invalid repetition size: {30}"},
      {"a+*", "bad repetition operator: +*"},
      {"\\d{2}{3}", "bad repetition operator: {2}{3}"},
      {"x*+++", "bad repetition operator: *+"},
      {"b?+", "bad repetition operator: ?+"},
      {"mlx5_(?=0)", "invalid perl operator: (?="},
      {"mlx5_[0-", "missing ]: [0-"},
  };
  for (const auto& [text, why] : refused) {
    errors = parse_config(std::string("devices:\n  include: ['") + text + "']\n", "t.yml", c);
    ASSERT_EQ(errors.size(), 1U) << text;
    EXPECT_NE(errors[0].find(std::string("invalid device pattern \"") + text + "\": " + why),
              std::string::npos)
        << errors[0];
  }
  for (const char* counted :
       {"a{1000}", "a{0,1000}", "a{7,}", "mlx5_{0}", "\\0123", "[+*?{}]+", "a+?b*?",
        "(mlx5_[0-9]+)?", "a{2}b{3}", "a{100}b{100}", "(a{100}){10}", "[[:alpha:]]+_\\d"}) {
    errors = parse_config(std::string("devices:\n  include: ['") + counted + "']\n", "t.yml", c);
    EXPECT_TRUE(errors.empty()) << counted << ": " << errors.front();
  }
  // Escaped parentheses open nothing.
  std::string escaped;
  for (int k = 0; k < 40; ++k) escaped += "\\(";
  errors = parse_config("devices:\n  include: ['" + escaped + "a']\n", "t.yml", c);
  EXPECT_TRUE(errors.empty()) << errors.front();
}

// RE2 has no back-references; a pattern with one is refused by name, since
// RE2 would read \12 as an octal escape and change its meaning silently.
TEST(Config, BackReferencesAreRefused) {
  Config c;
  for (const char* text : {"(a)\\1", "(mlx5_)\\12", "(a)\\18446744073709551600", "[\\1]"}) {
    auto errors = parse_config(std::string("devices:\n  include: ['") + text + "']\n", "t.yml", c);
    ASSERT_EQ(errors.size(), 1U) << text;
    EXPECT_NE(errors[0].find("back-references (\\1 to \\9) are not supported"), std::string::npos)
        << errors[0];
  }
  // An escaped backslash before a digit, and \Q...\E, are literal text.
  for (const char* text : {"a\\\\1", "\\Qa\\1\\E", "\\0"}) {
    auto errors = parse_config(std::string("devices:\n  include: ['") + text + "']\n", "t.yml", c);
    EXPECT_TRUE(errors.empty()) << text << ": " << errors.front();
  }
  // Every configured pattern goes through the same rules.
  auto errors = parse_config(
      "ethtool:\n  mappings:\n    - stat: '(rx)_\\1'\n      metric: discards\n      reason: x\n",
      "t.yml", c);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_NE(errors[0].find("invalid regular expression: back-references"), std::string::npos)
      << errors[0];
  errors = parse_config("qp_counters:\n  manual_rules: [{name: r, comm: 'a+*'}]\n", "t.yml", c);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_NE(errors[0].find("bad repetition operator: +*"), std::string::npos) << errors[0];
}

TEST(Config, ListenAddresses) {
  ListenAddress a;
  EXPECT_TRUE(parse_listen_address(":10910", a));
  EXPECT_EQ(a.host, "");
  EXPECT_EQ(a.port, 10910);
  EXPECT_TRUE(parse_listen_address("127.0.0.1:0", a));
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_TRUE(parse_listen_address("[::1]:80", a));
  EXPECT_EQ(a.host, "::1");
  for (const char* bad : {"", "10910", ":", ":65536", "::1:80", "[::1]", "[::1]80", "host:port"}) {
    EXPECT_FALSE(parse_listen_address(bad, a)) << bad;
  }
}

TEST(CommandLine, FlagsOverrideTheFile) {
  const char* argv[] = {"rdma_exporter",
                        "--web.listen-address",
                        "127.0.0.1:1",
                        "--path.sysfs",
                        "/host/sys",
                        "--devices.exclude",
                        "a",
                        "--devices.exclude",
                        "b",
                        "--once"};
  CommandLine cli;
  ASSERT_TRUE(parse_command_line(10, argv, cli).empty());
  EXPECT_TRUE(cli.once);
  Config c;
  apply_overrides(cli, c);
  EXPECT_EQ(c.web.listen_addresses, std::vector<std::string>{"127.0.0.1:1"});
  EXPECT_EQ(c.sysfs.root, "/host/sys");
  EXPECT_EQ(c.devices.exclude, (std::vector<std::string>{"a", "b"}));
}

TEST(CommandLine, UnknownFlagsAndStrayArgumentsAreErrors) {
  CommandLine cli;
  const char* a1[] = {"rdma_exporter", "--nope"};
  EXPECT_EQ(parse_command_line(2, a1, cli).size(), 1U);
  const char* a2[] = {"rdma_exporter", "stray"};
  EXPECT_EQ(parse_command_line(2, a2, cli).size(), 1U);
  const char* a3[] = {"rdma_exporter", "--config.file"};
  EXPECT_EQ(parse_command_line(2, a3, cli).size(), 1U);
}

}  // namespace
}  // namespace rdma_exporter

namespace rdma_exporter {
namespace {

std::vector<std::string> web_problems(const std::string& yaml, Config* out = nullptr) {
  Config c;
  auto errors = parse_config(yaml, "w.yml", c);
  if (out != nullptr) *out = c;
  return errors;
}

TEST(Config, ListenAddressIsOneAddressOrAList) {
  Config c;
  ASSERT_TRUE(web_problems("web: {listen_address: \"127.0.0.1:1\"}\n", &c).empty());
  EXPECT_EQ(c.web.listen_addresses, std::vector<std::string>{"127.0.0.1:1"});
  ASSERT_TRUE(web_problems("web:\n  listen_address: [\"127.0.0.1:1\", \"[::1]:1\"]\n", &c).empty());
  EXPECT_EQ(c.web.listen_addresses, (std::vector<std::string>{"127.0.0.1:1", "[::1]:1"}));
  auto errors = web_problems("web: {listen_address: []}\n");
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0], "w.yml: web.listen_address: give at least one address");
  errors = web_problems("web: {listen_address: [\":1\", nope]}\n");
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0],
            "w.yml: web.listen_address: expected host:port, :port or [v6]:port, got \"nope\"");
  errors = web_problems("web: {listen_address: [\":1\", \":1\"]}\n");
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0], "w.yml: web.listen_address: \":1\" is given twice");
  errors = web_problems("web: {listen_address: {a: b}}\n");
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_NE(errors[0].find("web.listen_address: expected a list of strings"), std::string::npos)
      << errors[0];
}

TEST(Config, TelemetryPath) {
  Config c;
  ASSERT_TRUE(web_problems("web: {telemetry_path: /rdma/metrics}\n", &c).empty());
  EXPECT_EQ(c.web.telemetry_path, "/rdma/metrics");
  const std::pair<const char*, const char*> bad[] = {
      {"metrics", "expected a path below / such as /metrics, got \"metrics\""},
      {"/", "expected a path below / such as /metrics, got \"/\""},
      {"/a b", "only letters, digits and / - . _ ~ may appear in it, got \"/a b\""},
      {"/m\"<", "only letters, digits and / - . _ ~ may appear in it, got \"/m\"<\""},
      {"/healthz", "\"/healthz\" is the path of another endpoint"},
      {"/-/reload", "\"/-/reload\" is the path of another endpoint"},
  };
  for (const auto& [path, problem] : bad) {
    c.web.telemetry_path = path;
    auto errors = validate_config(c);
    ASSERT_EQ(errors.size(), 1U) << path;
    EXPECT_EQ(errors[0], std::string("web.telemetry_path: ") + problem);
  }
}

TEST(CommandLine, WebFlags) {
  const char* argv[] = {"rdma_exporter",        "--web.listen-address=127.0.0.1:1",
                        "--web.listen-address", "[::1]:1",
                        "--web.telemetry-path", "/m"};
  CommandLine cli;
  ASSERT_TRUE(parse_command_line(6, argv, cli).empty());
  EXPECT_FALSE(cli.systemd_socket);
  Config c;
  apply_overrides(cli, c);
  EXPECT_EQ(c.web.listen_addresses, (std::vector<std::string>{"127.0.0.1:1", "[::1]:1"}));
  EXPECT_EQ(c.web.telemetry_path, "/m");

  const char* socket_argv[] = {"rdma_exporter", "--web.systemd-socket"};
  CommandLine activated;
  ASSERT_TRUE(parse_command_line(2, socket_argv, activated).empty());
  EXPECT_TRUE(activated.systemd_socket);

  const char* both[] = {"rdma_exporter", "--web.systemd-socket", "--web.listen-address", ":1"};
  CommandLine conflicting;
  auto errors = parse_command_line(4, both, conflicting);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_NE(errors[0].find("--web.systemd-socket and --web.listen-address exclude each other"),
            std::string::npos);
}

}  // namespace
}  // namespace rdma_exporter
