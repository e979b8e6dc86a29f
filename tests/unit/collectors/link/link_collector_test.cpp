#include <gtest/gtest.h>
#include <linux/ethtool.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <tuple>

#include "common/kernel/netdev/net_reader.hpp"
#include "common/kernel/netdev/netlink_codec.hpp"
#include "tests/fake_kernel/fake_ethnl.hpp"
#include "tests/fake_kernel/fake_nldev.hpp"
#include "tests/support/collector_run.hpp"
#include "tests/support/snapshot_query.hpp"
#include "tests/support/sysfs_files.hpp"

namespace rdma_exporter {
namespace {

namespace fs = std::filesystem;
using testing::sample;
using testing::series_count;

// Two RoCE ports on netdevs of their own and an InfiniBand port; every
// carrier file of its own value.
class LinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    netdev("ens1f0np0", "1\n", "7\n", "6\n");
    netdev("ens2f0np0", "0\n", "12\n", "13\n");
    testing::FakeDevice a{.index = 1, .name = "mlx5_0"};
    a.ports.push_back(testing::FakePort{.index = 1, .netdev = "ens1f0np0", .netdev_index = 4});
    testing::FakeDevice b{.index = 2, .name = "mlx5_1"};
    b.ports.push_back(testing::FakePort{.index = 1, .netdev = "ens2f0np0", .netdev_index = 5});
    testing::FakeDevice ib{.index = 3, .name = "mlx5_2", .protocol = "ib"};
    ib.ports.push_back(testing::FakePort{.index = 1, .lid = 3});
    nldev_->devices = {a, b, ib};
    // ens1f0np0: up, RS-FEC counted per lane on 4 lanes, a driver that
    // counts link-down events. ens2f0np0: down without a cable, no FEC.
    testing::FakeEthnlNetdev up;
    up.down_events = 9;
    up.fec = true;
    up.active = ETHTOOL_LINK_MODE_FEC_RS_BIT;
    up.corrected = {100, 10, 20, 30, 40};
    up.uncorrectable = {5, 1, 0, 4, 0};
    up.corrected_bits = {};  // not counted: a zero-length attribute
    ethnl_->netdevs["ens1f0np0"] = up;
    testing::FakeEthnlNetdev down;
    down.link = 0;
    down.ext_state = ETHTOOL_LINK_EXT_STATE_NO_CABLE;
    ethnl_->netdevs["ens2f0np0"] = down;
  }

  void netdev(const std::string& name, const std::string& carrier, const std::string& up,
              const std::string& down) {
    const std::string dir = "class/net/" + name + "/";
    if (!carrier.empty()) sys_.file(dir + "carrier", carrier);
    if (!up.empty()) sys_.file(dir + "carrier_up_count", up);
    if (!down.empty()) sys_.file(dir + "carrier_down_count", down);
  }

  // With `ethnl_` as ethtool netlink unless it was moved out (sysfs only).
  std::shared_ptr<const Snapshot> collect() {
    if (!run_) {
      ethnl_ptr_ = ethnl_.get();
      KernelInterfaces kernel{std::move(nldev_), nullptr, nullptr};
      kernel.generic = std::move(ethnl_);
      run_ = std::make_unique<testing::CollectorRun>("link", std::move(kernel), CollectorSettings(),
                                                     sys_.root().string());
    }
    return run_->collect();
  }

  testing::SysfsFiles sys_;
  std::unique_ptr<testing::FakeNldev> nldev_ = std::make_unique<testing::FakeNldev>();
  std::unique_ptr<testing::FakeEthnl> ethnl_ = std::make_unique<testing::FakeEthnl>();
  testing::FakeEthnl* ethnl_ptr_ = nullptr;
  std::unique_ptr<testing::CollectorRun> run_;
};

const Labels kA{{"device", "mlx5_0"}, {"port", "1"}, {"netdev", "ens1f0np0"}};
const Labels kB{{"device", "mlx5_1"}, {"port", "1"}, {"netdev", "ens2f0np0"}};

TEST_F(LinkTest, EveryPortsNetdevWithItsOwnValues) {
  auto s = collect();
  EXPECT_TRUE(s->all_succeeded());
  EXPECT_EQ(sample(*s, "rdma_netdev_carrier", kA), 1);
  EXPECT_EQ(sample(*s, "rdma_netdev_carrier_up_changes_total", kA), 7);
  EXPECT_EQ(sample(*s, "rdma_netdev_carrier_down_changes_total", kA), 6);
  EXPECT_EQ(sample(*s, "rdma_netdev_carrier", kB), 0);
  EXPECT_EQ(sample(*s, "rdma_netdev_carrier_up_changes_total", kB), 12);
  EXPECT_EQ(sample(*s, "rdma_netdev_carrier_down_changes_total", kB), 13);
  // The InfiniBand port has no netdev.
  EXPECT_EQ(series_count(*s, "rdma_netdev_carrier"), 2U);
}

TEST_F(LinkTest, LinkStateAndFecFromEthtoolNetlink) {
  auto s = collect();
  EXPECT_TRUE(s->all_succeeded()) << s->outcomes.at(0).errors.at(0);
  EXPECT_EQ(sample(*s, "rdma_netdev_link_down_events_total", kA), 9);
  Labels rs = kA;
  rs.emplace_back("mode", "rs");
  EXPECT_EQ(sample(*s, "rdma_netdev_fec_mode_info", rs), 1);
  EXPECT_EQ(sample(*s, "rdma_netdev_fec_corrected_blocks_total", kA), 100);
  EXPECT_EQ(sample(*s, "rdma_netdev_fec_uncorrectable_blocks_total", kA), 5);
  for (const auto& [lane, corrected, uncorrectable] :
       std::vector<std::tuple<std::string, double, double>>{
           {"0", 10, 1}, {"1", 20, 0}, {"2", 30, 4}, {"3", 40, 0}}) {
    Labels l = kA;
    l.emplace_back("lane", lane);
    EXPECT_EQ(sample(*s, "rdma_netdev_fec_lane_corrected_blocks_total", l), corrected) << lane;
    EXPECT_EQ(sample(*s, "rdma_netdev_fec_lane_uncorrectable_blocks_total", l), uncorrectable)
        << lane;
  }
  EXPECT_EQ(series_count(*s, "rdma_netdev_fec_lane_corrected_blocks_total"), 4U);
  EXPECT_FALSE(testing::has_family(*s, "rdma_netdev_fec_corrected_bits_total"));
  // ens2f0np0: no cable, no link-down count, no FEC (EOPNOTSUPP: quiet).
  Labels why = kB;
  why.emplace_back("ext_state", "no_cable");
  why.emplace_back("ext_substate", "");
  EXPECT_EQ(sample(*s, "rdma_netdev_link_ext_state_info", why), 1);
  EXPECT_TRUE(std::isnan(sample(*s, "rdma_netdev_link_down_events_total", kB)));
  EXPECT_EQ(series_count(*s, "rdma_netdev_fec_mode_info"), 1U);
  EXPECT_EQ(series_count(*s, "rdma_netdev_link_ext_state_info"), 1U);
  EXPECT_EQ(sample(*s, "rdma_exporter_ethtool_netlink_available"), 1);
  // The family is looked up once; each netdev is asked once per collection.
  collect();
  EXPECT_EQ(ethnl_ptr_->asked,
            (std::vector<std::string>{"FAMILY", "LINKSTATE ens1f0np0", "FEC ens1f0np0",
                                      "LINKSTATE ens2f0np0", "FEC ens2f0np0", "LINKSTATE ens1f0np0",
                                      "FEC ens1f0np0", "LINKSTATE ens2f0np0", "FEC ens2f0np0"}));
}

// A kernel before 5.6 has no ethtool netlink; a netdev ethtool netlink does
// not know (gone since netlink listed it): the sysfs series stay, nothing
// fails.
TEST_F(LinkTest, NoEthtoolNetlinkLeavesTheSysfsSeries) {
  ethnl_->family_present = false;
  auto s = collect();
  EXPECT_TRUE(s->all_succeeded());
  EXPECT_EQ(sample(*s, "rdma_netdev_carrier_down_changes_total", kA), 6);
  EXPECT_FALSE(testing::has_family(*s, "rdma_netdev_fec_mode_info"));
  EXPECT_EQ(sample(*s, "rdma_exporter_ethtool_netlink_available"), 0);
}

TEST_F(LinkTest, AMalformedEthtoolAnswerFailsTheCollectorAndKeepsTheRest) {
  ethnl_->netdevs["ens1f0np0"].corrected = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};  // 9 lanes
  auto s = collect();
  ASSERT_EQ(s->outcomes.at(0).errors.size(), 1U);
  EXPECT_EQ(s->outcomes.at(0).errors[0],
            "ens1f0np0: malformed netlink reply: attribute ETHTOOL_A_FEC_STAT_CORRECTED has 80 "
            "bytes, not 8 for the total and 8 per lane");
  EXPECT_FALSE(testing::has_family(*s, "rdma_netdev_fec_corrected_blocks_total"));
  EXPECT_EQ(sample(*s, "rdma_netdev_link_down_events_total", kA), 9);
  EXPECT_EQ(sample(*s, "rdma_netdev_carrier_up_changes_total", kA), 7);
}

// A reason with a substate: named from the state it refines.
TEST_F(LinkTest, ASubstateIsNamedForItsState) {
  ethnl_->netdevs["ens2f0np0"].ext_state = ETHTOOL_LINK_EXT_STATE_LINK_LOGICAL_MISMATCH;
  ethnl_->netdevs["ens2f0np0"].ext_substate = 4;
  auto s = collect();
  Labels why = kB;
  why.emplace_back("ext_state", "link_logical_mismatch");
  why.emplace_back("ext_substate", "fc_fec_is_not_locked");
  EXPECT_EQ(sample(*s, "rdma_netdev_link_ext_state_info", why), 1);
}

// A flap between two scrapes: the counts grow, the carrier is up again.
TEST_F(LinkTest, AFlapBetweenTwoScrapesIsCounted) {
  collect();
  const std::string dir = "class/net/ens1f0np0/";
  sys_.file(dir + "carrier_up_count", "8\n");
  sys_.file(dir + "carrier_down_count", "7\n");
  auto s = collect();
  EXPECT_EQ(sample(*s, "rdma_netdev_carrier", kA), 1);
  EXPECT_EQ(sample(*s, "rdma_netdev_carrier_up_changes_total", kA), 8);
  EXPECT_EQ(sample(*s, "rdma_netdev_carrier_down_changes_total", kA), 7);
}

// An administratively down device answers EINVAL for its carrier (here: a
// file that is absent), a kernel before 4.16 has no counts: those series
// are left out, without an error.
TEST_F(LinkTest, MissingFilesLeaveTheirSeriesOut) {
  fs::remove(sys_.root() / "class/net/ens1f0np0/carrier");
  fs::remove(sys_.root() / "class/net/ens2f0np0/carrier_up_count");
  fs::remove(sys_.root() / "class/net/ens2f0np0/carrier_down_count");
  auto s = collect();
  EXPECT_TRUE(s->all_succeeded());
  EXPECT_TRUE(std::isnan(sample(*s, "rdma_netdev_carrier", kA)));
  EXPECT_EQ(sample(*s, "rdma_netdev_carrier_up_changes_total", kA), 7);
  EXPECT_EQ(sample(*s, "rdma_netdev_carrier", kB), 0);
  EXPECT_TRUE(std::isnan(sample(*s, "rdma_netdev_carrier_down_changes_total", kB)));
  EXPECT_EQ(series_count(*s, "rdma_netdev_carrier_down_changes_total"), 1U);
}

// A netdev in another namespace (not under class/net): nothing, no error.
TEST_F(LinkTest, ANetdevThatIsNotThereHasNoSeries) {
  fs::remove_all(sys_.root() / "class/net/ens2f0np0");
  auto s = collect();
  EXPECT_TRUE(s->all_succeeded());
  EXPECT_EQ(series_count(*s, "rdma_netdev_carrier"), 1U);
  EXPECT_TRUE(std::isnan(sample(*s, "rdma_netdev_carrier_up_changes_total", kB)));
}

TEST_F(LinkTest, MalformedValuesFailTheCollectorNamingTheFile) {
  sys_.file("class/net/ens1f0np0/carrier", "2\n");
  sys_.file("class/net/ens2f0np0/carrier_down_count", "many\n");
  auto s = collect();
  const std::string net = (sys_.root() / "class/net").string();
  EXPECT_EQ(
      s->outcomes.at(0).errors,
      (std::vector<std::string>{
          "ens1f0np0: read " + net + "/ens1f0np0/carrier: not 0 or 1: 2",
          "ens2f0np0: read " + net + "/ens2f0np0/carrier_down_count: not a number: \"many\""}));
  EXPECT_TRUE(std::isnan(sample(*s, "rdma_netdev_carrier", kA)));
  EXPECT_EQ(sample(*s, "rdma_netdev_carrier_down_changes_total", kA), 6);
  EXPECT_EQ(sample(*s, "rdma_netdev_carrier_up_changes_total", kB), 12);
}

// The reader keeps the files of the netdevs still behind a port only, and
// finds a netdev made again under the same name.
TEST(NetReader, ForgetsNetdevsAndFindsThemAgain) {
  testing::SysfsFiles sys;
  sys.file("class/net/eth1/carrier_down_count", "3\n");
  sys.file("class/net/eth2/carrier_down_count", "4\n");
  sysfs::NetReader reader(sys.root());
  sysfs::ReadNotes notes;
  EXPECT_EQ(reader.read_carrier("eth1", notes)->down_changes, 3U);
  EXPECT_EQ(reader.read_carrier("eth2", notes)->down_changes, 4U);
  EXPECT_EQ(reader.cached_devices(), 2U);
  reader.keep_only({"eth2"});
  EXPECT_EQ(reader.cached_devices(), 1U);
  fs::remove_all(sys.root() / "class/net/eth2");
  EXPECT_FALSE(reader.read_carrier("eth2", notes));
  EXPECT_EQ(reader.cached_devices(), 0U);
  sys.file("class/net/eth2/carrier_down_count", "0\n");
  EXPECT_EQ(reader.read_carrier("eth2", notes)->down_changes, 0U);
  for (const char* name : {"", ".", "..", "eth1/../eth2"}) {
    EXPECT_FALSE(reader.read_carrier(name, notes)) << name;
  }
  EXPECT_TRUE(notes.problems.empty());
}

}  // namespace
}  // namespace rdma_exporter

namespace rdma_exporter {
namespace {

TEST(LinkExtSubstate, NamedAsTheUapiNamesThem) {
  EXPECT_EQ(ethnl::ext_substate_name(ETHTOOL_LINK_EXT_STATE_AUTONEG, 6), "no_hcd");
  EXPECT_EQ(ethnl::ext_substate_name(ETHTOOL_LINK_EXT_STATE_LINK_TRAINING_FAILURE, 1),
            "kr_frame_lock_not_acquired");
  EXPECT_EQ(ethnl::ext_substate_name(ETHTOOL_LINK_EXT_STATE_LINK_LOGICAL_MISMATCH, 5),
            "rs_fec_is_not_locked");
  EXPECT_EQ(ethnl::ext_substate_name(ETHTOOL_LINK_EXT_STATE_BAD_SIGNAL_INTEGRITY, 4),
            "serdes_alos");
  EXPECT_EQ(ethnl::ext_substate_name(ETHTOOL_LINK_EXT_STATE_CABLE_ISSUE, 2), "cable_test_failure");
  EXPECT_EQ(ethnl::ext_substate_name(ETHTOOL_LINK_EXT_STATE_MODULE, 1), "cmis_not_ready");
  // Past the last known substate, 0, and states without substates.
  EXPECT_EQ(ethnl::ext_substate_name(ETHTOOL_LINK_EXT_STATE_AUTONEG, 7), "substate7");
  EXPECT_EQ(ethnl::ext_substate_name(ETHTOOL_LINK_EXT_STATE_AUTONEG, 0), "substate0");
  EXPECT_EQ(ethnl::ext_substate_name(ETHTOOL_LINK_EXT_STATE_NO_CABLE, 1), "substate1");
}

}  // namespace
}  // namespace rdma_exporter
