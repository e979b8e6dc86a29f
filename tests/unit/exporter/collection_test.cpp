// Whole collections against the fake nldev kernel and sysfs fixture trees.

#include "exporter/collection.hpp"

#include <gtest/gtest.h>
#include <rdma/rdma_netlink.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "tests/fake_kernel/fake_nldev.hpp"
#include "tests/support/fake_node_api.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/snapshot_query.hpp"
#include "tests/support/sysfs_tree.hpp"

namespace rdma_exporter {
namespace {

using testing::FakeDevice;
using testing::FakeNldev;
using testing::FakePort;

// The value the sysfs fixture writes into a counter file, as a sample's.
double fixture_value(const std::string& name, int dev, int port) {
  return static_cast<double>(testing::sysfs_counter_value(dev, port, name));
}

using testing::has_family;
using testing::sample;

const CollectorOutcome& outcome(const Snapshot& s, const std::string& name) {
  return *std::find_if(s.outcomes.begin(), s.outcomes.end(),
                       [&](const auto& o) { return o.name == name; });
}

class CollectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeDevice mlx{.index = 1,
                   .name = "mlx5_0",
                   .fw_version = "16.35.2000",
                   .node_guid = 0x98039b0300345a1eULL,
                   .sys_image_guid = 0x98039b0300345a1eULL,
                   .node_type = 1,
                   .protocol = "roce"};
    mlx.ports.push_back(FakePort{.index = 1,
                                 .netdev = "ens1f0",
                                 .netdev_index = 4,
                                 .counters = {{"out_of_sequence", 17}, {"np_cnp_sent", 99}}});
    mlx.ports.push_back(
        FakePort{.index = 2, .state = 1, .phys_state = 3, .counters = {{"out_of_sequence", 3}}});
    mlx.resources = {{"qp", 12}, {"cq", 4}};
    FakeDevice ib{.index = 5, .name = "mlx5_1", .protocol = "ib"};
    ib.ports.push_back(FakePort{.index = 1,
                                .lid = 7,
                                .sm_lid = 1,
                                .lmc = 0,
                                .counters = {{"rx_write_requests", 1ULL << 40}}});
    kernel_->devices = {mlx, ib};
    config_.sysfs.root = "/nonexistent";
  }

  std::shared_ptr<const Snapshot> collect() {
    if (!collection_) {
      auto kernel = std::make_unique<FakeNldev>(std::move(*kernel_));
      kernel_ptr_ = kernel.get();
      collection_ = std::make_unique<Collection>(config_, std::move(kernel));
    }
    return collection_->collect();
  }
  FakeNldev& kernel() { return kernel_ptr_ != nullptr ? *kernel_ptr_ : *kernel_; }

  Config config_;
  std::unique_ptr<FakeNldev> kernel_ = std::make_unique<FakeNldev>();
  FakeNldev* kernel_ptr_ = nullptr;
  std::unique_ptr<Collection> collection_;
};

TEST_F(CollectionTest, ExportsDevicesPortsCountersAndResources) {
  auto s = collect();
  EXPECT_TRUE(s->all_succeeded());
  EXPECT_EQ(sample(*s, "rdma_device_info",
                   {{"device", "mlx5_0"},
                    {"fw_version", "16.35.2000"},
                    {"node_guid", "9803:9b03:0034:5a1e"},
                    {"node_type", "ca"},
                    {"protocol", "roce"}}),
            1.0);
  EXPECT_EQ(sample(*s, "rdma_device_ports", {{"device", "mlx5_0"}}), 2.0);
  EXPECT_EQ(sample(*s, "rdma_port_state", {{"device", "mlx5_0"}, {"port", "1"}}), 4.0);
  EXPECT_EQ(sample(*s, "rdma_port_state", {{"device", "mlx5_0"}, {"port", "2"}}), 1.0);
  EXPECT_EQ(sample(*s, "rdma_port_info",
                   {{"device", "mlx5_0"},
                    {"port", "1"},
                    {"state", "ACTIVE"},
                    {"phys_state", "LINK_UP"},
                    {"netdev", "ens1f0"}}),
            1.0);
  EXPECT_EQ(
      sample(*s, "rdma_port_info",
             {{"device", "mlx5_0"}, {"port", "2"}, {"state", "DOWN"}, {"phys_state", "DISABLED"}}),
      1.0);
  EXPECT_EQ(sample(*s, "rdma_port_lid", {{"device", "mlx5_1"}}), 7.0);
  EXPECT_EQ(sample(*s, "rdma_port_sm_lid", {{"device", "mlx5_1"}, {"port", "1"}}), 1.0);
  EXPECT_TRUE(std::isnan(sample(*s, "rdma_port_lid", {{"device", "mlx5_0"}})));
  EXPECT_EQ(sample(*s, "rdma_port_hw_out_of_sequence_total", {{"device", "mlx5_0"}, {"port", "1"}}),
            17.0);
  EXPECT_EQ(sample(*s, "rdma_port_hw_out_of_sequence_total", {{"device", "mlx5_0"}, {"port", "2"}}),
            3.0);
  EXPECT_EQ(sample(*s, "rdma_port_hw_np_cnp_sent_total", {{"device", "mlx5_0"}}), 99.0);
  EXPECT_EQ(sample(*s, "rdma_port_hw_rx_write_requests_total", {{"device", "mlx5_1"}}),
            static_cast<double>(1ULL << 40));
  EXPECT_EQ(sample(*s, "rdma_device_resources", {{"device", "mlx5_0"}, {"resource", "qp"}}), 12.0);
  EXPECT_EQ(sample(*s, "rdma_exporter_netlink_available"), 1.0);
  EXPECT_EQ(sample(*s, "rdma_exporter_collector_success", {{"collector", "hw_counters"}}), 1.0);
}

TEST_F(CollectionTest, CountersFollowTheKernel) {
  auto first = collect();
  kernel().devices[0].ports[0].counters[0].second = 1000;
  auto second = collect();
  EXPECT_EQ(
      sample(*first, "rdma_port_hw_out_of_sequence_total", {{"device", "mlx5_0"}, {"port", "1"}}),
      17.0);
  EXPECT_EQ(
      sample(*second, "rdma_port_hw_out_of_sequence_total", {{"device", "mlx5_0"}, {"port", "1"}}),
      1000.0);
  EXPECT_EQ(sample(*second, "rdma_exporter_collections_total"), 2.0);
}

TEST_F(CollectionTest, ExcludedDeviceIsNeverRead) {
  config_.devices.exclude = {"mlx5_1"};
  kernel_->devices[1].resources = {{"qp", 2}};  // in the system-wide summary dump
  auto s = collect();
  EXPECT_TRUE(s->all_succeeded());
  EXPECT_EQ(kernel().requests_for(5), 0U);  // no PORT_GET, no STAT_GET for mlx5_1
  EXPECT_GT(kernel().requests_for(1), 0U);
  EXPECT_TRUE(std::isnan(sample(*s, "rdma_device_info", {{"device", "mlx5_1"}})));
  EXPECT_TRUE(std::isnan(sample(*s, "rdma_device_resources", {{"device", "mlx5_1"}})));
  EXPECT_EQ(sample(*s, "rdma_device_resources", {{"device", "mlx5_0"}, {"resource", "qp"}}), 12.0);
}

TEST_F(CollectionTest, IncludeListSelectsDevices) {
  config_.devices.include = {"mlx5_1"};
  auto s = collect();
  EXPECT_EQ(kernel().requests_for(1), 0U);
  EXPECT_EQ(sample(*s, "rdma_port_hw_rx_write_requests_total", {{"device", "mlx5_1"}}),
            static_cast<double>(1ULL << 40));
}

TEST_F(CollectionTest, OneFailingPortDoesNotHideTheOthers) {
  kernel_->devices[0].ports[1].stat_error = EPERM;
  auto s = collect();
  const auto& o = outcome(*s, "hw_counters");
  ASSERT_EQ(o.errors.size(), 1U);
  EXPECT_NE(o.errors[0].find("mlx5_0 port 2"), std::string::npos);
  EXPECT_NE(o.errors[0].find("Operation not permitted"), std::string::npos);
  EXPECT_EQ(sample(*s, "rdma_port_hw_out_of_sequence_total", {{"device", "mlx5_0"}, {"port", "1"}}),
            17.0);
  EXPECT_EQ(sample(*s, "rdma_exporter_collector_success", {{"collector", "hw_counters"}}), 0.0);
  EXPECT_EQ(sample(*s, "rdma_exporter_collector_success", {{"collector", "devices"}}), 1.0);
  EXPECT_EQ(sample(*s, "rdma_exporter_collector_failures_total", {{"collector", "hw_counters"}}),
            1.0);
}

TEST_F(CollectionTest, DriverWithoutPortCountersIsNotAFailure) {
  // The kernel answers EINVAL when the driver has no port stats; EOPNOTSUPP
  // on older kernels.
  kernel_->devices[1].ports[0].stat_error = EINVAL;
  kernel_->devices[0].ports[1].stat_error = EOPNOTSUPP;
  auto s = collect();
  EXPECT_TRUE(s->all_succeeded());
  EXPECT_TRUE(std::isnan(sample(*s, "rdma_port_hw_rx_write_requests_total")));
  EXPECT_TRUE(std::isnan(sample(*s, "rdma_port_hw_out_of_sequence_total", {{"port", "2"}})));
  EXPECT_EQ(sample(*s, "rdma_port_hw_out_of_sequence_total", {{"device", "mlx5_0"}, {"port", "1"}}),
            17.0);
}

TEST_F(CollectionTest, MalformedReplyFailsOnlyItsCollector) {
  kernel_->tamper = [](netlink::Reply& r) {
    // Corrupt every resource summary reply: cut the datagram short.
    const auto* nlh = reinterpret_cast<const nlmsghdr*>(r.datagrams.front().data());
    if (RDMA_NL_GET_OP(nlh->nlmsg_type) == RDMA_NLDEV_CMD_RES_GET) r.datagrams.front().resize(30);
  };
  auto s = collect();
  EXPECT_FALSE(outcome(*s, "resources").errors.empty());
  EXPECT_TRUE(outcome(*s, "devices").errors.empty());
  EXPECT_TRUE(outcome(*s, "hw_counters").errors.empty());
  EXPECT_FALSE(has_family(*s, "rdma_device_resources"));
}

TEST_F(CollectionTest, NoRdmaKernelIsNotAFailure) {
  kernel_->absent = true;
  auto s = collect();
  EXPECT_TRUE(s->all_succeeded());
  EXPECT_EQ(sample(*s, "rdma_exporter_netlink_available"), 0.0);
  EXPECT_FALSE(has_family(*s, "rdma_device_info"));
  EXPECT_TRUE(has_family(*s, "rdma_exporter_build_info"));
  EXPECT_FALSE(s->text.empty());
}

// In a container without rdma netlink (or on a kernel without it) the port
// hw counters come from sysfs, for the devices the filter allows.
TEST_F(CollectionTest, WithoutNetlinkPortCountersComeFromSysfs) {
  kernel_->absent = true;
  config_.sysfs.root = testing::make_sysfs_fixture("mlx5:2:1 rxe");
  config_.devices.exclude = {"mlx5_1"};
  auto s = collect();
  EXPECT_TRUE(s->all_succeeded());
  EXPECT_EQ(sample(*s, "rdma_exporter_netlink_available"), 0.0);
  EXPECT_EQ(sample(*s, "rdma_port_hw_out_of_sequence_total", {{"device", "mlx5_0"}, {"port", "1"}}),
            fixture_value("out_of_sequence", 0, 1));
  EXPECT_EQ(sample(*s, "rdma_port_hw_sent_pkts_total", {{"device", "rxe0"}, {"port", "1"}}),
            987010.0);
  EXPECT_EQ(sample(*s, "rdma_port_hw_source_info",
                   {{"device", "rxe0"}, {"port", "1"}, {"source", "sysfs"}}),
            1.0);
  EXPECT_TRUE(std::isnan(sample(*s, "rdma_port_hw_out_of_sequence_total", {{"device", "mlx5_1"}})));
  EXPECT_TRUE(std::isnan(sample(*s, "rdma_port_hw_source_info", {{"device", "mlx5_1"}})));
  EXPECT_FALSE(has_family(*s, "rdma_port_hw_lifespan_total"));
}

TEST_F(CollectionTest, DisabledCollectorsDoNotRun) {
  config_.collectors.set_enabled("hw_counters", false);
  config_.collectors.set_enabled("resources", false);
  config_.collectors.set_enabled("qp_counters", false);
  config_.collectors.set_enabled("optional_counters", false);
  config_.collectors.set_enabled("ethtool", false);
  config_.collectors.set_enabled("dcb", false);
  config_.collectors.set_enabled("pcie", false);
  config_.collectors.set_enabled("link", false);
  config_.collectors.set_enabled("transceiver", false);
  auto s = collect();
  EXPECT_EQ(s->outcomes.size(), 2U);
  EXPECT_FALSE(has_family(*s, "rdma_port_hw_out_of_sequence_total"));
  EXPECT_TRUE(std::none_of(kernel().requests.begin(), kernel().requests.end(), [](const auto& r) {
    return r.cmd == RDMA_NLDEV_CMD_STAT_GET || r.cmd == RDMA_NLDEV_CMD_RES_GET ||
           r.cmd == RDMA_NLDEV_CMD_STAT_GET_STATUS;
  }));
}

TEST_F(CollectionTest, SysfsFixtureAlongsideNetlink) {
  config_.sysfs.root = testing::make_sysfs_fixture("mlx5:1:1 efa broken");
  config_.devices.exclude = {"broken.*"};
  auto s = collect();
  EXPECT_TRUE(s->all_succeeded()) << (s->outcomes.back().errors.empty()
                                          ? ""
                                          : s->outcomes.back().errors[0]);
  EXPECT_EQ(
      sample(*s, "rdma_port_pma_port_xmit_data_bytes_total", {{"device", "mlx5_0"}, {"port", "1"}}),
      4.0 * fixture_value("port_xmit_data", 0, 1));  // the file counts 4-byte words
  EXPECT_EQ(sample(*s, "rdma_port_rate_bytes_per_second", {{"device", "mlx5_0"}}), 12.5e9);
  EXPECT_EQ(sample(*s, "rdma_port_pma_symbol_error_total", {{"device", "mlx5_0"}, {"port", "1"}}),
            fixture_value("symbol_error", 0, 1));
  EXPECT_EQ(sample(*s, "rdma_device_hw_submitted_cmds_total", {{"device", "efa_0"}}),
            fixture_value("submitted_cmds", 0, 0));
  EXPECT_EQ(sample(*s, "rdma_device_hardware_info", {{"device", "mlx5_0"}, {"hca_type", "MT4119"}}),
            1.0);
  EXPECT_FALSE(has_family(*s, "rdma_device_hw_lifespan_total"));
}

// IBA PortXmitData and PortRcvData (and their 64-bit forms) count octets
// divided by four; the other PMA counters are plain counts.
TEST_F(CollectionTest, PmaDataCountersAreExportedInBytes) {
  const auto root =
      std::filesystem::path(::testing::TempDir()) / ("rdma_pma_" + std::to_string(::getpid()));
  const auto counters = root / "class/infiniband/mlx5_1/ports/1/counters";
  std::filesystem::create_directories(counters);
  for (const auto& [file, text] : {std::pair{"port_xmit_data", "1000"},
                                   {"port_rcv_data", "250"},
                                   {"port_xmit_data_64", "7"},
                                   {"port_rcv_data_64", "9"},
                                   {"port_xmit_packets", "1000"},
                                   {"symbol_error", "3"}}) {
    std::ofstream(counters / file) << text << "\n";
  }
  config_.sysfs.root = root.string();
  auto s = collect();
  EXPECT_TRUE(outcome(*s, "sysfs").errors.empty());
  const Labels port{{"device", "mlx5_1"}, {"port", "1"}};
  EXPECT_EQ(sample(*s, "rdma_port_pma_port_xmit_data_bytes_total", port), 4000.0);
  EXPECT_EQ(sample(*s, "rdma_port_pma_port_rcv_data_bytes_total", port), 1000.0);
  EXPECT_EQ(sample(*s, "rdma_port_pma_port_xmit_data_64_bytes_total", port), 28.0);
  EXPECT_EQ(sample(*s, "rdma_port_pma_port_rcv_data_64_bytes_total", port), 36.0);
  EXPECT_EQ(sample(*s, "rdma_port_pma_port_xmit_packets_total", port), 1000.0);
  EXPECT_EQ(sample(*s, "rdma_port_pma_symbol_error_total", port), 3.0);
  std::filesystem::remove_all(root);
}

TEST_F(CollectionTest, BrokenSysfsFailsTheSysfsCollectorButKeepsGoodValues) {
  config_.sysfs.root = testing::make_sysfs_fixture("mlx5 broken");
  auto s = collect();
  EXPECT_EQ(outcome(*s, "sysfs").errors.size(), 5U);
  EXPECT_EQ(sample(*s, "rdma_port_pma_port_xmit_packets_total", {{"device", "broken0"}}), 12.0);
  EXPECT_EQ(sample(*s, "rdma_exporter_sysfs_unavailable_values"), 4.0);
  EXPECT_FALSE(std::isnan(sample(*s, "rdma_port_pma_symbol_error_total", {{"device", "mlx5_0"}})));
}

TEST_F(CollectionTest, RenderedTextAndGzipAgree) {
  auto s = collect();
  EXPECT_NE(s->text.find("# TYPE rdma_port_hw_out_of_sequence_total counter\n"), std::string::npos);
  EXPECT_NE(s->text.find("rdma_port_hw_out_of_sequence_total{device=\"mlx5_0\",port=\"1\"} 17\n"),
            std::string::npos);
  ASSERT_GE(s->gzip.size(), 18U);
  EXPECT_EQ(static_cast<unsigned char>(s->gzip[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(s->gzip[1]), 0x8b);
}

TEST_F(CollectionTest, TheNodesKubernetesApisAreAccountedEachCollection) {
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("rdma-collection-k8s-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  testing::FakeNodeApi fake(dir + "/cri.sock", "");
  config_.kubernetes.enabled = true;
  config_.kubernetes.cri_socket = dir + "/cri.sock";
  config_.kubernetes.pod_resources_socket = dir + "/absent.sock";
  config_.kubernetes.refresh_interval = std::chrono::hours(1);
  config_.collection.once = true;  // no refresh thread: the counts are the first refresh's
  auto s = collect();
  EXPECT_EQ(sample(*s, "rdma_exporter_kubernetes_api_up", {{"api", "cri"}}), 1);
  EXPECT_EQ(sample(*s, "rdma_exporter_kubernetes_api_calls_total", {{"api", "cri"}}), 1);
  EXPECT_EQ(sample(*s, "rdma_exporter_kubernetes_api_failures_total", {{"api", "cri"}}), 0);
  EXPECT_EQ(sample(*s, "rdma_exporter_kubernetes_api_up", {{"api", "pod_resources"}}), 0);
  EXPECT_EQ(sample(*s, "rdma_exporter_kubernetes_api_calls_total", {{"api", "pod_resources"}}), 1);
  EXPECT_EQ(sample(*s, "rdma_exporter_kubernetes_api_failures_total", {{"api", "pod_resources"}}),
            1);
  EXPECT_EQ(fake.list_containers_calls(), 1);
  // Off: no directory, no series.
  config_.kubernetes.enabled = false;
  collection_->reconfigure(config_);
  s = collection_->collect();
  EXPECT_FALSE(has_family(*s, "rdma_exporter_kubernetes_api_up"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rdma_exporter
