// The probe section's UD settings: classes, pinglists, histograms, their
// defaults and the errors that name a bad one.

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "common/yaml_walker.hpp"
#include "exporter/probe/plan/options.hpp"

namespace rdma_exporter::probe {
namespace {

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
      "  pair_series: failing\n"
      "  pinglist: {group_label: tor, remote_per_rail: 3, epoch: 2m, group: spare}\n",
      errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  ASSERT_EQ(o.classes.size(), 1u);
  EXPECT_EQ(o.classes[0].op, Op::ud);
  EXPECT_EQ(o.classes[0].size, 256u);
  EXPECT_EQ(o.classes[0].flows, 8);
  EXPECT_EQ(o.histograms, "target");
  EXPECT_EQ(o.pair_series, "failing");
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
  EXPECT_EQ(o.pair_series, "all");
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
      "  pair_series: healthy\n"
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
  EXPECT_TRUE(has("probe.pair_series"));
  EXPECT_TRUE(has("probe.pinglist.group_label: the label \"rail\" is set by the probe itself"));
  EXPECT_TRUE(has("probe.pinglist.epoch: must be positive"));
}

}  // namespace
}  // namespace rdma_exporter::probe
