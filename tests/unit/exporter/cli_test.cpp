// --collector.<name>, --no-collector.<name>, --collector.disable-defaults and
// --web.disable-exporter-metrics.

#include "exporter/cli.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace rdma_exporter {
namespace {

std::vector<std::string> parse(std::vector<const char*> args, CommandLine& cli) {
  args.insert(args.begin(), "rdma_exporter");
  return parse_command_line(static_cast<int>(args.size()), args.data(), cli);
}

// Which collectors run: the file's settings, then the flags.
std::vector<std::string> enabled(const CommandLine& cli, const std::string& yaml = "") {
  Config config;
  if (!yaml.empty()) {
    auto errors = parse_config(yaml, "test.yml", config);
    EXPECT_TRUE(errors.empty()) << errors.front();
  }
  apply_overrides(cli, config);
  std::vector<std::string> out;
  for (const auto& e : collector_registry()) {
    if (config.collectors.enabled(e.name)) out.push_back(e.name);
  }
  return out;
}

using Names = std::vector<std::string>;
const Names kAll = {"devices",   "hw_counters", "optional_counters",
                    "resources", "qp_counters", "ethtool",
                    "dcb",       "sysfs",       "pcie",
                    "link",      "transceiver", "pods"};

TEST(CollectorFlags, DefaultsAndSingleFlags) {
  CommandLine cli;
  ASSERT_TRUE(parse({}, cli).empty());
  EXPECT_EQ(enabled(cli), kAll);
  EXPECT_FALSE(cli.disable_exporter_metrics);

  cli = {};
  ASSERT_TRUE(parse({"--no-collector.qp_counters", "--no-collector.dcb"}, cli).empty());
  EXPECT_EQ(enabled(cli), (Names{"devices", "hw_counters", "optional_counters", "resources",
                                 "ethtool", "sysfs", "pcie", "link", "transceiver", "pods"}));
}

TEST(CollectorFlags, DisableDefaultsKeepsOnlyTheNamedOnes) {
  CommandLine cli;
  ASSERT_TRUE(
      parse({"--collector.sysfs", "--collector.disable-defaults", "--collector.devices"}, cli)
          .empty());
  EXPECT_EQ(enabled(cli), (Names{"devices", "sysfs"}));
  // The file's collectors section does not bring others back.
  EXPECT_EQ(enabled(cli, "collectors:\n  dcb: true\n  ethtool: true\n"),
            (Names{"devices", "sysfs"}));
}

TEST(CollectorFlags, FlagsOverrideTheFileAndTheLastFlagWins) {
  CommandLine cli;
  ASSERT_TRUE(parse({"--collector.dcb", "--no-collector.sysfs", "--collector.sysfs",
                     "--collector.ethtool", "--no-collector.ethtool"},
                    cli)
                  .empty());
  EXPECT_EQ(enabled(cli, "collectors:\n  dcb: false\n  sysfs: false\n  resources: false\n"),
            (Names{"devices", "hw_counters", "optional_counters", "qp_counters", "dcb", "sysfs",
                   "pcie", "link", "transceiver", "pods"}));
}

TEST(CollectorFlags, UnknownCollectorsAreErrorsNamingTheKnownOnes) {
  const std::string known =
      " (collectors: devices, hw_counters, optional_counters, resources, qp_counters, ethtool, "
      "dcb, sysfs, pcie, link, transceiver, pods)";
  CommandLine cli;
  EXPECT_EQ(parse({"--collector.infiniband"}, cli),
            Names{"unknown collector \"infiniband\" in --collector.infiniband" + known});
  EXPECT_EQ(parse({"--no-collector.probe"}, cli),
            Names{"unknown collector \"probe\" in --no-collector.probe" + known});
  // Flags take no value.
  EXPECT_EQ(parse({"--collector.sysfs=false"}, cli).size(), 1U);
}

TEST(CollectorFlags, HelpListsEveryCollectorWithItsDefaultAndHelp) {
  CommandLine cli;
  ASSERT_TRUE(parse({"--help"}, cli).empty());
  // Descriptions wrap: one space for every run of white space.
  std::string help;
  for (char c : cli.help_text) {
    const bool space = c == ' ' || c == '\n';
    if (!space || help.empty() || help.back() != ' ') help.push_back(space ? ' ' : c);
  }
  for (const auto& e : collector_registry()) {
    EXPECT_NE(help.find("--collector." + e.name + " "), std::string::npos) << e.name;
    EXPECT_NE(help.find("--no-collector." + e.name + " "), std::string::npos) << e.name;
    EXPECT_NE(help.find("enable the " + e.name + " collector (default enabled): " + e.help),
              std::string::npos)
        << e.name;
  }
  EXPECT_NE(help.find("--collector.disable-defaults"), std::string::npos);
  EXPECT_NE(help.find("--web.disable-exporter-metrics"), std::string::npos);
}

TEST(ExporterMetricsFlag, Parsed) {
  CommandLine cli;
  ASSERT_TRUE(parse({"--web.disable-exporter-metrics"}, cli).empty());
  EXPECT_TRUE(cli.disable_exporter_metrics);
}

}  // namespace
}  // namespace rdma_exporter
