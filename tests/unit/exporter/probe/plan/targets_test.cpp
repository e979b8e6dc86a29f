// exporter/probe/targets: file_sd groups into targets, their labels and rails, and the problems
// of a bad file.

#include "exporter/probe/plan/targets.hpp"

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
      // Bytes that are not text, which yaml-cpp alone loads as an empty
      // document: read as no targets, they would drop every pair.
      {std::string("%\x01\x9c\x00 z", 6), "peers.yml:1:2: character U+0001"},
      {"- targets: [a:1]\n\xff", "peers.yml:2:1: byte 0xff is not UTF-8"},
  };
  for (const auto& [text, want] : bad) {
    auto r = parse_file_sd(text, "peers.yml");
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.error().message.find(want), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.rfind("peers.yml", 0), 0u) << r.error().message;
  }
}
}  // namespace
}  // namespace rdma_exporter::probe
