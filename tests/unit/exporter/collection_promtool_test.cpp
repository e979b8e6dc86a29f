// Every metric family the exporter can produce, from a collection with all
// collectors fed (fake nldev kernel with counter sets and management, sysfs
// fixture), passes `promtool check metrics` from Debian's prometheus package.

#include <gtest/gtest.h>
#include <rdma/rdma_netlink.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <regex>

#include "collectors/dcb/options.hpp"
#include "collectors/ethtool/options.hpp"
#include "collectors/optional_counters/options.hpp"
#include "collectors/qp_counters/options.hpp"
#include "exporter/collection.hpp"
#include "tests/fake_kernel/fake_dcb.hpp"
#include "tests/fake_kernel/fake_ethtool.hpp"
#include "tests/fake_kernel/fake_nldev.hpp"
#include "tests/support/fixtures.hpp"

namespace rdma_exporter {
namespace {

TEST(Promtool, AcceptsAndDocsListEveryFamilyTheExporterMakes) {
  auto k = std::make_unique<testing::FakeNldev>();
  testing::FakeDevice dev{.index = 1, .name = "mlx5_0", .fw_version = "16.35.2000"};
  dev.ports.push_back(
      testing::FakePort{.index = 1,
                        .netdev = "ens1f0",
                        .counters = {{"out_of_sequence", 3}},
                        .counter_mode = RDMA_COUNTER_MODE_AUTO,
                        .auto_mask = RDMA_COUNTER_MASK_QP_TYPE | RDMA_COUNTER_MASK_PID,
                        .optional_counters = testing::mlx5_optional_counters()});
  dev.ports[0].optional_counters[0].enabled = true;
  dev.ports.push_back(testing::FakePort{.index = 2, .lid = 4, .sm_lid = 1, .lmc = 0});
  dev.resources = {{"qp", 3}, {"cq", 2}};
  k->devices.push_back(dev);
  k->privileged = false;  // management writes fail: their metrics appear too
  const uint32_t q = k->create_qp(1, 1, 2, 4242);
  k->traffic(1, q, "rx_write_requests", 10);
  k->create_qp(1, 2, 4, std::nullopt, "ib_core");

  // The netdev behind port 1: mlx5 statistics and DCB configuration.
  auto ethtool = std::make_unique<testing::FakeEthtool>();
  testing::FakeNetdev nic{.driver = "mlx5_core",
                          .stats = {{"rx_prio3_pause", 1},
                                    {"tx_prio3_pause_duration", 2},
                                    {"rx_prio3_bytes", 3},
                                    {"tx_prio3_packets", 4},
                                    {"rx_prio3_discards", 5},
                                    {"rx_prio3_marked", 6},
                                    {"rx_out_of_buffer", 7},
                                    {"rx_cnp_example", 8}}};
  ethtool->netdevs["ens1f0"] = nic;
  auto dcb = std::make_unique<testing::FakeDcb>();
  dcb->netdevs["ens1f0"] = testing::mlx5_dcb();

  Config c;
  c.sysfs.root = testing::make_sysfs_fixture("mlx5:1:2 efa rxe");
  c.collectors.options<QpCountersOptions>().ports = {
      {.device = "mlx5_0", .port = 2, .mode = QpCountersOptions::Mode::auto_mode}};
  c.collectors.options<QpCountersOptions>().inventory_by_comm = true;
  c.collectors.options<OptionalCountersOptions>().ports = {
      {.enable = {"cc_tx_cnp_pkts"}}};  // fails: unprivileged
  c.collectors.options<EthtoolOptions>().raw_stats = true;
  c.collectors.options<EthtoolOptions>().mappings = {
      {.stat = "rx_cnp_example", .metric = "cnp_packets", .direction = "rx"}};
  c.collectors.options<DcbOptions>().dscp_priority = true;
  Collection collection(c, KernelInterfaces{std::move(k), std::move(dcb), std::move(ethtool)});
  collection.maintain();
  auto snap = collection.collect();
  ASSERT_NE(snap->text.find("rdma_qp_stat_rx_write_requests_total"), std::string::npos);
  ASSERT_NE(snap->text.find("rdma_qp_stat_writes_total"), std::string::npos);
  ASSERT_NE(snap->text.find("rdma_port_pma_"), std::string::npos);
  for (const char* family :
       {"rdma_port_optional_stat_enabled", "rdma_port_optional_stat_writes_total",
        "rdma_netdev_pfc_pause_frames_total", "rdma_netdev_pfc_pause_duration_seconds_total",
        "rdma_netdev_priority_bytes_total", "rdma_netdev_priority_packets_total",
        "rdma_netdev_priority_discards_total", "rdma_netdev_ecn_marked_packets_total",
        "rdma_netdev_cnp_packets_total", "rdma_netdev_discards_total", "rdma_netdev_ethtool_stat",
        "rdma_netdev_pfc_enabled", "rdma_netdev_priority_traffic_class",
        "rdma_netdev_ets_bandwidth_percent", "rdma_netdev_ets_tsa_info",
        "rdma_netdev_qos_trust_info", "rdma_netdev_dscp_priority", "rdma_netdev_dcbx_info"}) {
    EXPECT_NE(snap->text.find(std::string("\n") + family + "{"), std::string::npos) << family;
  }

  // Every family is documented in docs/metrics.md, by name or by a pattern
  // such as rdma_port_hw_<name>_total.
  std::ifstream doc_file(RDMA_EXPORTER_SOURCE_DIR "/docs/metrics.md");
  const std::string doc((std::istreambuf_iterator<char>(doc_file)),
                        std::istreambuf_iterator<char>());
  ASSERT_FALSE(doc.empty());
  std::vector<std::regex> patterns;
  const std::regex placeholder("`(rdma_[a-z_]*<name>[a-z_]*)`");
  for (std::sregex_iterator it(doc.begin(), doc.end(), placeholder), end; it != end; ++it) {
    std::string p = (*it)[1];
    p.replace(p.find("<name>"), 6, "[A-Za-z0-9_]+");
    patterns.emplace_back(p);
  }
  for (const auto& f : snap->families) {
    const bool named = doc.find("`" + f.name + "`") != std::string::npos;
    const bool patterned = std::any_of(patterns.begin(), patterns.end(), [&](const std::regex& r) {
      return std::regex_match(f.name, r);
    });
    EXPECT_TRUE(named || patterned) << f.name << " is not in docs/metrics.md";
  }

  const std::string file = ::testing::TempDir() + "promtool_input.prom";
  std::ofstream(file) << snap->text;
  FILE* p = ::popen(("promtool check metrics < " + file + " 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int status = ::pclose(p);
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, "");
}

}  // namespace
}  // namespace rdma_exporter
