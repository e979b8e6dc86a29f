#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "tests/fake_kernel/fake_nldev.hpp"
#include "tests/support/collector_run.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/snapshot_query.hpp"

namespace rdma_exporter::sysfs {
namespace {

// The collector on the fixture tree (tests/support/sysfs_tree.hpp): mlx5_N
// at 0000:<0x10 + N>:00.0, 16 GT/s x8 of 32 GT/s x16; every other AER
// error counted, the rest 0.
TEST(PcieCollector, ExportsTheFixturesFunctions) {
  testing::CollectorRun run(
      "pcie", KernelInterfaces{std::make_unique<testing::FakeNldev>(), nullptr, nullptr},
      CollectorSettings(), testing::make_sysfs_fixture("mlx5:2:1 rxe"));
  auto snap = run.collect();
  EXPECT_TRUE(snap->all_succeeded());
  using testing::sample;
  using testing::series_count;
  const Labels m1{{"device", "mlx5_1"}, {"pci_address", "0000:11:00.0"}};
  EXPECT_EQ(series_count(*snap, "rdma_device_pci_info"), 2U);  // not rxe0
  EXPECT_EQ(
      sample(*snap, "rdma_device_pci_info",
             {{"device", "mlx5_1"}, {"pci_address", "0000:11:00.0"}, {"physical_function", ""}}),
      1);
  EXPECT_EQ(sample(*snap, "rdma_pcie_link_speed_transfers_per_second", m1), 16e9);
  EXPECT_EQ(sample(*snap, "rdma_pcie_link_max_speed_transfers_per_second", m1), 32e9);
  EXPECT_EQ(sample(*snap, "rdma_pcie_link_width_lanes", m1), 8);
  EXPECT_EQ(sample(*snap, "rdma_pcie_link_max_width_lanes", m1), 16);
  // "RxErr": (82 + 120 + 69 + 114 + 114) * 1000 + 1 * 100 + 1 * 10.
  Labels rx = m1;
  rx.emplace_back("aer_severity", "correctable");
  rx.emplace_back("error", "RxErr");
  EXPECT_EQ(sample(*snap, "rdma_pcie_aer_errors_total", rx), 499110);
  // "DLP", the second nonfatal error, is 0: no series.
  Labels dlp = m1;
  dlp.emplace_back("aer_severity", "nonfatal");
  dlp.emplace_back("error", "DLP");
  EXPECT_TRUE(std::isnan(sample(*snap, "rdma_pcie_aer_errors_total", dlp)));
  // Per device: 4 of the 8 correctable errors, 9 of the 18 of each other.
  EXPECT_EQ(series_count(*snap, "rdma_pcie_aer_errors_total"), 2U * (4 + 9 + 9));
  // "TOTAL_ERR_FATAL": its bytes' sum, 1171, * 1000 + 1 * 100 + 3 * 10.
  Labels fatal = m1;
  fatal.emplace_back("aer_severity", "fatal");
  EXPECT_EQ(sample(*snap, "rdma_pcie_aer_messages_total", fatal), 1171130);
  EXPECT_EQ(series_count(*snap, "rdma_pcie_aer_messages_total"), 2U * 3);
}

TEST(PcieCollector, BrokenFilesFailTheCollectorAndKeepTheGoodValues) {
  testing::CollectorRun run(
      "pcie", KernelInterfaces{std::make_unique<testing::FakeNldev>(), nullptr, nullptr},
      CollectorSettings(), testing::make_sysfs_fixture("broken mlx5"));
  auto snap = run.collect();
  ASSERT_EQ(snap->outcomes.size(), 1U);
  EXPECT_EQ(snap->outcomes[0].errors.size(), 3U);  // speed, width and AER file
  EXPECT_EQ(testing::series_count(*snap, "rdma_device_pci_info"), 2U);
  EXPECT_EQ(testing::sample(*snap, "rdma_pcie_link_width_lanes",
                            {{"device", "mlx5_0"}, {"pci_address", "0000:10:00.0"}}),
            8);
  EXPECT_TRUE(
      std::isnan(testing::sample(*snap, "rdma_pcie_link_width_lanes", {{"device", "broken0"}})));
}

}  // namespace
}  // namespace rdma_exporter::sysfs
