#include "collectors/transceiver/transceiver_collector.hpp"

#include <gtest/gtest.h>
#include <linux/ethtool.h>
#include <linux/ethtool_netlink.h>
#include <linux/genetlink.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "common/kernel/netdev/module_reader.hpp"
#include "common/kernel/netdev/netlink_codec.hpp"
#include "tests/fake_kernel/fake_ethnl.hpp"
#include "tests/fake_kernel/fake_ethtool.hpp"
#include "tests/fake_kernel/fake_module.hpp"
#include "tests/fake_kernel/fake_nldev.hpp"
#include "tests/fake_kernel/nl_message.hpp"
#include "tests/support/collector_run.hpp"
#include "tests/support/snapshot_query.hpp"

namespace rdma_exporter {
namespace {

using module_eeprom::HalfKey;
using module_eeprom::kAddressA0;
using testing::sample;
using testing::series_count;

// ---------------------------------------------------------------- reader

TEST(ModuleReader, ReadsTheHalvesTheModuleCallsForOverNetlink) {
  testing::FakeEthnl ethnl;
  ethnl.netdevs["eth0"].module = testing::qsfp28_module();
  module_eeprom::Reader reader(&ethnl, nullptr);
  auto r = reader.read("eth0");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->via, "netlink");
  EXPECT_TRUE(r->problems.empty());
  // 128 bytes a request: the lower page, then pages 00h and 03h upper.
  const std::vector<std::string> asked = {"FAMILY", "MODULE eth0 80 0 0 0 128",
                                          "MODULE eth0 80 0 0 128 128",
                                          "MODULE eth0 80 0 3 128 128"};
  EXPECT_EQ(ethnl.asked, asked);
  EXPECT_DOUBLE_EQ(*module_eeprom::decode(r->image)->tx_bias_thresholds.high_alarm, 0.015);
}

TEST(ModuleReader, CmisPagesAndAnSfpsSecondAddress) {
  testing::FakeEthnl ethnl;
  ethnl.netdevs["dd0"].module = testing::qsfp_dd_module();
  ethnl.netdevs["sfp0"].module = testing::sfp_module();
  module_eeprom::Reader reader(&ethnl, nullptr);
  ASSERT_TRUE(reader.read("dd0").ok());
  ASSERT_TRUE(reader.read("sfp0").ok());
  const std::vector<std::string> asked = {
      "FAMILY",
      "MODULE dd0 80 0 0 0 128",
      "MODULE dd0 80 0 0 128 128",
      "MODULE dd0 80 0 1 128 128",
      "MODULE dd0 80 0 2 128 128",
      "MODULE dd0 80 0 17 128 128",
      "MODULE sfp0 80 0 0 0 128",
      "MODULE sfp0 81 0 0 0 128",  // A2h: the diagnostics
  };
  EXPECT_EQ(ethnl.asked, asked);
}

TEST(ModuleReader, AHalfThatFailsIsNamedAndTheRestKept) {
  testing::FakeEthnl ethnl;
  auto halves = testing::qsfp28_module();
  halves.erase(HalfKey{kAddressA0, 0, 3, true});
  ethnl.netdevs["eth0"].module = halves;
  ethnl.netdevs["eth0"].module_error = EIO;
  module_eeprom::Reader reader(&ethnl, nullptr);
  auto r = reader.read("eth0");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->problems.size(), 1U);
  EXPECT_TRUE(r->problems[0].starts_with("page 03h: ")) << r->problems[0];
  EXPECT_EQ(module_eeprom::decode(r->image)->vendor, "MELLANOX");
}

TEST(ModuleReader, FallsBackToTheLegacyIoctl) {
  testing::FakeEthnl ethnl;
  ethnl.netdevs["eth0"] = testing::FakeEthnlNetdev{};  // MODULE_EEPROM_GET: EOPNOTSUPP
  testing::FakeEthtool ioctl;
  ioctl.netdevs["eth0"] = testing::FakeNetdev{
      .driver = "mlx5_core",
      .module_type = ETH_MODULE_SFF_8636,
      .module_eeprom = testing::flat_image(testing::qsfp28_module(), ETH_MODULE_SFF_8636, 640)};
  module_eeprom::Reader reader(&ethnl, &ioctl);
  auto r = reader.read("eth0");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->via, "ioctl");
  EXPECT_TRUE(r->problems.empty());
  EXPECT_DOUBLE_EQ(*module_eeprom::decode(r->image)->tx_power_thresholds.low_warning, 0.00016);
  ASSERT_EQ(ioctl.calls.size(), 2U);
  EXPECT_EQ(ioctl.calls[0].second, static_cast<uint32_t>(ETHTOOL_GMODULEINFO));
  EXPECT_EQ(ioctl.calls[1].second, static_cast<uint32_t>(ETHTOOL_GMODULEEEPROM));

  // A kernel without ethtool netlink at all (ENOENT) reads the same way.
  testing::FakeEthnl old;
  old.family_present = false;
  module_eeprom::Reader old_reader(&old, &ioctl);
  auto r2 = old_reader.read("eth0");
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->via, "ioctl");
}

TEST(ModuleReader, AShortLegacyImageNamesWhatIsNotInIt) {
  testing::FakeEthtool ioctl;
  // A paged QSFP28 whose driver gives 256 bytes: no page 03h.
  ioctl.netdevs["eth0"] = testing::FakeNetdev{
      .driver = "x",
      .module_type = ETH_MODULE_SFF_8636,
      .module_eeprom = testing::flat_image(testing::qsfp28_module(), ETH_MODULE_SFF_8636, 256)};
  module_eeprom::Reader reader(nullptr, &ioctl);
  auto r = reader.read("eth0");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->problems,
            std::vector<std::string>{"page 03h: not in the 256-byte image the legacy ioctl gives"});
}

TEST(ModuleReader, NoModuleEitherWay) {
  testing::FakeEthnl ethnl;
  ethnl.netdevs["veth0"] = testing::FakeEthnlNetdev{};
  testing::FakeEthtool ioctl;
  ioctl.netdevs["veth0"] = testing::veth_netdev();
  module_eeprom::Reader reader(&ethnl, &ioctl);
  auto r = reader.read("veth0");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, EOPNOTSUPP);
  // An error other than "not supported" is not retried the other way.
  ethnl.netdevs["veth0"].module_error = EIO;
  r = reader.read("veth0");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, EIO);
  EXPECT_EQ(ioctl.calls.size(), 1U);  // the first read's GMODULEINFO only
}

TEST(ModuleReader, LegacyEepromLengthOutOfRange) {
  testing::FakeEthtool ioctl;
  ioctl.netdevs["eth0"] = testing::FakeNetdev{.driver = "x",
                                              .module_type = ETH_MODULE_SFF_8472,
                                              .module_eeprom = std::vector<uint8_t>(641)};
  module_eeprom::Reader reader(nullptr, &ioctl);
  auto r = reader.read("eth0");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, EBADMSG);
  EXPECT_NE(r.error().message.find("641 bytes"), std::string::npos) << r.error().message;
}

TEST(ModuleEepromCodec, RequestAndShortAnswer) {
  const ethnl::EepromRead read{0x51, 0, 0, 0, 128};
  // The kernel's answer, with fewer bytes than asked for.
  testing::NlMessage m(testing::FakeEthnl::kFamily);
  genlmsghdr g{};
  g.cmd = ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY;
  m.family_header(&g, sizeof g);
  const std::vector<uint8_t> ten(10, 7);
  m.raw(ETHTOOL_A_MODULE_EEPROM_DATA, ten.data(), ten.size());
  netlink::Reply reply;
  reply.datagrams.push_back(m.bytes());
  reply.datagrams.push_back(testing::ack_message());
  auto r = ethnl::decode_module_eeprom(reply, testing::FakeEthnl::kFamily, read);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, EBADMSG);
  EXPECT_NE(r.error().message.find("10 bytes, not the 128"), std::string::npos);
}

TEST(ModuleEepromCodec, TheFakeKernelRefusesWhatTheKernelRefuses) {
  testing::FakeEthnl ethnl;
  ethnl.netdevs["eth0"].module = testing::qsfp28_module();
  ethnl::Client client(ethnl);
  auto code = [&](ethnl::EepromRead r) {
    auto answer = client.module_eeprom("eth0", r);
    return answer.ok() ? 0 : answer.error().code;
  };
  EXPECT_EQ(code({0x50, 0, 3, 0, 128}), EINVAL);   // a page's lower half
  EXPECT_EQ(code({0x50, 0, 0, 100, 64}), EINVAL);  // across the half
  EXPECT_EQ(code({0x50, 0, 0, 0, 129}), ERANGE);   // longer than a half
  EXPECT_EQ(code({0x50, 0, 0, 128, 128}), 0);
  EXPECT_EQ(code({0x50, 0, 0, 130, 10}), 0);
  EXPECT_EQ(client.module_eeprom("eth0", {0x50, 0, 0, 130, 10})->at(0), 0x00);
  EXPECT_EQ(client.module_eeprom("eth0", {0x50, 0, 0, 148, 4})->at(0), 'M');
  EXPECT_EQ(code({0x50, 0, 0x20, 128, 128}), EOPNOTSUPP);  // a page the module lacks
  EXPECT_EQ(client.module_eeprom("nope", {0x50, 0, 0, 0, 128}).error().code, ENODEV);
}

// ------------------------------------------------------------- collector

// One RoCE port per netdev, and an InfiniBand port (no netdev, no module).
class TransceiverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::FakeDevice a{.index = 1, .name = "mlx5_0"};
    a.ports.push_back(testing::FakePort{.index = 1, .netdev = "ens1f0np0", .netdev_index = 4});
    a.ports.push_back(testing::FakePort{.index = 2, .netdev = "ens1f1np1", .netdev_index = 5});
    testing::FakeDevice b{.index = 2, .name = "rxe0"};
    b.ports.push_back(testing::FakePort{.index = 1, .netdev = "veth0", .netdev_index = 6});
    testing::FakeDevice ib{.index = 3, .name = "mlx5_2", .protocol = "ib"};
    ib.ports.push_back(testing::FakePort{.index = 1, .lid = 3});
    nldev_->devices = {a, b, ib};
    ethnl_->netdevs["ens1f0np0"].module = testing::qsfp28_module();
    ethnl_->netdevs["ens1f1np1"].module = testing::qsfp_dd_module();
    ethnl_->netdevs["veth0"] = testing::FakeEthnlNetdev{};
  }

  std::unique_ptr<testing::CollectorRun> run(
      bool one_collection, const CollectorSettings& settings = CollectorSettings()) {
    ethnl_ptr_ = ethnl_.get();
    KernelInterfaces kernel{std::move(nldev_), nullptr, nullptr};
    kernel.module_generic = std::move(ethnl_);
    return std::make_unique<testing::CollectorRun>("transceiver", std::move(kernel), settings,
                                                   "/nonexistent", one_collection);
  }

  static TransceiverCollector& collector(testing::CollectorRun& r) {
    return dynamic_cast<TransceiverCollector&>(r.collector());
  }

  std::unique_ptr<testing::FakeNldev> nldev_ = std::make_unique<testing::FakeNldev>();
  std::unique_ptr<testing::FakeEthnl> ethnl_ = std::make_unique<testing::FakeEthnl>();
  testing::FakeEthnl* ethnl_ptr_ = nullptr;
};

TEST_F(TransceiverTest, OneCollectionReadsEveryModuleInCollect) {
  auto r = run(true);
  auto snap = r->collect();
  ASSERT_TRUE(snap->outcomes[0].errors.empty()) << snap->outcomes[0].errors[0];
  const Labels port1 = {{"device", "mlx5_0"}, {"port", "1"}, {"netdev", "ens1f0np0"}};
  const Labels port2 = {{"device", "mlx5_0"}, {"port", "2"}, {"netdev", "ens1f1np1"}};
  Labels info = port1;
  for (const auto& l : Labels{{"type", "qsfp28"},
                              {"standard", "sff-8636"},
                              {"vendor", "MELLANOX"},
                              {"part_number", "MMA1B00-C100D"},
                              {"serial_number", "MT2021FT00042"},
                              {"revision", "B2"}}) {
    info.push_back(l);
  }
  EXPECT_EQ(sample(*snap, "rdma_transceiver_info", info), 1);
  EXPECT_EQ(series_count(*snap, "rdma_transceiver_info"), 2U);
  EXPECT_DOUBLE_EQ(sample(*snap, "rdma_transceiver_temperature_celsius", port1), 40.5);
  EXPECT_DOUBLE_EQ(sample(*snap, "rdma_transceiver_temperature_celsius", port2), 45.75);
  EXPECT_DOUBLE_EQ(sample(*snap, "rdma_transceiver_supply_voltage_volts", port2), 3.28);
  auto with = [](Labels l, std::initializer_list<std::pair<std::string, std::string>> more) {
    for (const auto& m : more) l.push_back(m);
    return l;
  };
  EXPECT_DOUBLE_EQ(sample(*snap, "rdma_transceiver_rx_power_watts", with(port1, {{"lane", "2"}})),
                   0.0009);
  EXPECT_DOUBLE_EQ(sample(*snap, "rdma_transceiver_tx_power_watts", with(port2, {{"lane", "7"}})),
                   0.0017);
  EXPECT_DOUBLE_EQ(sample(*snap, "rdma_transceiver_tx_bias_amperes", with(port2, {{"lane", "1"}})),
                   0.0084);
  EXPECT_EQ(series_count(*snap, "rdma_transceiver_rx_power_watts"), 12U);  // 4 + 8 lanes
  EXPECT_DOUBLE_EQ(sample(*snap, "rdma_transceiver_rx_power_threshold_watts",
                          with(port1, {{"level", "low_warning"}})),
                   0.0001);
  EXPECT_DOUBLE_EQ(sample(*snap, "rdma_transceiver_tx_bias_threshold_amperes",
                          with(port2, {{"level", "high_warning"}})),
                   0.018);
  EXPECT_DOUBLE_EQ(sample(*snap, "rdma_transceiver_temperature_threshold_celsius",
                          with(port2, {{"level", "low_alarm"}})),
                   -5);
  EXPECT_DOUBLE_EQ(sample(*snap, "rdma_transceiver_supply_voltage_threshold_volts",
                          with(port1, {{"level", "high_alarm"}})),
                   3.63);
  EXPECT_DOUBLE_EQ(sample(*snap, "rdma_transceiver_tx_power_threshold_watts",
                          with(port1, {{"level", "low_alarm"}})),
                   0.00008);
  EXPECT_EQ(sample(*snap, "rdma_transceiver_flag",
                   with(port2, {{"flag", "temperature_high_warning"}, {"lane", ""}})),
            1);
  EXPECT_EQ(
      sample(*snap, "rdma_transceiver_flag", with(port1, {{"flag", "rx_los"}, {"lane", "1"}})), 1);
  EXPECT_EQ(series_count(*snap, "rdma_transceiver_flag"), 9U);  // 4 + 5
  EXPECT_EQ(series_count(*snap, "rdma_transceiver_read_timestamp_seconds"), 2U);
  EXPECT_GT(sample(*snap, "rdma_transceiver_read_timestamp_seconds", port1), 1.7e9);
  // veth0 has no module (quietly); the InfiniBand port has no netdev.
  for (const auto& line : {"veth0", "mlx5_2"}) {
    EXPECT_EQ(snap->text.find(std::string("\"") + line + "\""), std::string::npos) << line;
  }

  // Within the interval, a second collection reads nothing again.
  const std::size_t asked = ethnl_ptr_->asked.size();
  snap = r->collect();
  EXPECT_EQ(ethnl_ptr_->asked.size(), asked);
  EXPECT_DOUBLE_EQ(sample(*snap, "rdma_transceiver_temperature_celsius", port1), 40.5);
}

TEST_F(TransceiverTest, AFailingReadIsCountedAndLoggedNotTheCollectorsFailure) {
  ethnl_->netdevs["ens1f0np0"].module.clear();
  ethnl_->netdevs["ens1f0np0"].module_error = EIO;  // a module that does not answer
  auto halves = testing::qsfp_dd_module();
  halves.erase(HalfKey{kAddressA0, 0, 0x11, true});
  ethnl_->netdevs["ens1f1np1"].module = halves;  // page 11h does not answer
  ethnl_->netdevs["ens1f1np1"].module_error = EIO;
  auto r = run(true);
  ::testing::internal::CaptureStderr();
  auto snap = r->collect();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(snap->outcomes[0].errors.empty()) << snap->outcomes[0].errors[0];
  const Labels port1 = {{"device", "mlx5_0"}, {"port", "1"}, {"netdev", "ens1f0np0"}};
  const Labels port2 = {{"device", "mlx5_0"}, {"port", "2"}, {"netdev", "ens1f1np1"}};
  EXPECT_EQ(sample(*snap, "rdma_transceiver_read_failures_total", port1), 1);
  EXPECT_EQ(sample(*snap, "rdma_transceiver_read_failures_total", port2), 1);
  // veth0 has no module to read: no count.
  EXPECT_EQ(series_count(*snap, "rdma_transceiver_read_failures_total"), 2U);
  EXPECT_EQ(series_count(*snap, "rdma_transceiver_info"), 1U);  // ens1f1np1's
  EXPECT_EQ(series_count(*snap, "rdma_transceiver_rx_power_watts"), 0U);
  EXPECT_DOUBLE_EQ(sample(*snap, "rdma_transceiver_temperature_celsius", port2), 45.75);
  EXPECT_NE(log.find("msg=\"transceiver module read failed\" netdev=ens1f0np0 err=\""),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("Input/output error"), std::string::npos) << log;
  EXPECT_NE(log.find("msg=\"transceiver module read in part\" netdev=ens1f1np1 err=\"page 11h: "),
            std::string::npos)
      << log;
}

TEST_F(TransceiverTest, WithoutCapNetAdminNoModuleIsReadAndThatIsSaidOnce) {
  // The kernel refuses MODULE_EEPROM_GET to a process without CAP_NET_ADMIN.
  for (const char* netdev : {"ens1f0np0", "ens1f1np1"}) {
    ethnl_->netdevs[netdev].module.clear();
    ethnl_->netdevs[netdev].module_error = EPERM;
  }
  auto r = run(true);
  ::testing::internal::CaptureStderr();
  auto snap = r->collect();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(snap->outcomes[0].errors.empty());
  EXPECT_EQ(sample(*snap, "rdma_exporter_transceiver_reads_permitted"), 0);
  EXPECT_EQ(series_count(*snap, "rdma_transceiver_read_failures_total"), 0U);
  EXPECT_EQ(series_count(*snap, "rdma_transceiver_info"), 0U);
  const std::string said = "transceiver module reads are not permitted";
  const auto first = log.find(said);
  EXPECT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find(said, first + 1), std::string::npos) << log;
  EXPECT_NE(log.find("level=info"), std::string::npos) << log;
}

TEST_F(TransceiverTest, ReadsArePermittedWhenAModuleAnswers) {
  auto r = run(true);
  auto snap = r->collect();
  EXPECT_EQ(sample(*snap, "rdma_exporter_transceiver_reads_permitted"), 1);
}

// Only ens1f0np0, whose module does not answer, read every millisecond.
TEST_F(TransceiverTest, AFailureIsLoggedOnceWhileItLasts) {
  testing::FakeDevice a{.index = 1, .name = "mlx5_0"};
  a.ports.push_back(testing::FakePort{.index = 1, .netdev = "ens1f0np0", .netdev_index = 4});
  nldev_->devices = {a};
  ethnl_->netdevs["ens1f0np0"].module.clear();
  ethnl_->netdevs["ens1f0np0"].module_error = EIO;
  CollectorSettings settings;
  settings.options<TransceiverOptions>().interval = std::chrono::milliseconds(1);
  auto r = run(false, settings);
  ::testing::internal::CaptureStderr();
  (void)r->collect();  // hands the netdev over
  ASSERT_TRUE(collector(*r).wait_for_reads(4, std::chrono::minutes(5)));
  auto snap = r->collect();
  r.reset();  // joins the reading thread: every line it logged is in
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_GE(sample(*snap, "rdma_transceiver_read_failures_total", {{"device", "mlx5_0"}}), 4);
  std::size_t lines = 0;
  for (std::size_t at = log.find("transceiver module read failed"); at != std::string::npos;
       at = log.find("transceiver module read failed", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1U) << log;
}

// A transport whose module reads of one netdev block until released.
class GatedEthnl final : public netlink::Transport {
 public:
  explicit GatedEthnl(testing::FakeEthnl& inner) : inner_(inner) {}
  Result<netlink::Reply> exchange(std::span<const uint8_t> request) override {
    std::unique_lock lock(mutex_);
    if (closed_) {
      ++waiting_;
      changed_.notify_all();
      changed_.wait(lock, [&] { return !closed_; });
      --waiting_;
    }
    return inner_.exchange(request);
  }
  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  void open() {
    {
      std::lock_guard lock(mutex_);
      closed_ = false;
    }
    changed_.notify_all();
  }
  // Until a read is held at the gate.
  void wait_for_held() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return waiting_ > 0; });
  }

 private:
  testing::FakeEthnl& inner_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool closed_ = false;
  int waiting_ = 0;
};

TEST_F(TransceiverTest, InTheBackgroundAHeldReadDelaysNoCollection) {
  testing::FakeEthnl& fake = *ethnl_;
  auto gate = std::make_unique<GatedEthnl>(fake);
  GatedEthnl* g = gate.get();
  KernelInterfaces kernel{std::move(nldev_), nullptr, nullptr};
  kernel.module_generic = std::move(gate);
  auto keep = std::move(ethnl_);  // the gate reads through it
  CollectorSettings settings;
  settings.options<TransceiverOptions>().interval = std::chrono::hours(1);
  testing::CollectorRun r("transceiver", std::move(kernel), settings, "/nonexistent", false);

  // The first collection finds nothing read yet and hands the netdevs over.
  auto snap = r.collect();
  EXPECT_TRUE(snap->outcomes[0].errors.empty());
  EXPECT_EQ(series_count(*snap, "rdma_transceiver_info"), 0U);
  // Three netdevs read (veth0's quietly, without a module).
  ASSERT_TRUE(collector(r).wait_for_reads(3, std::chrono::minutes(5)));
  snap = r.collect();
  EXPECT_EQ(series_count(*snap, "rdma_transceiver_info"), 2U);

  // A new module read is held: collections go on with what was read.
  g->close();
  settings.options<TransceiverOptions>().interval = std::chrono::seconds(1);
  r.reconfigure(settings);  // every read falls due within a second
  g->wait_for_held();
  for (int i = 0; i < 3; ++i) {
    snap = r.collect();
    EXPECT_DOUBLE_EQ(sample(*snap, "rdma_transceiver_temperature_celsius",
                            {{"device", "mlx5_0"}, {"port", "1"}}),
                     40.5);
  }
  g->open();
  ASSERT_TRUE(collector(r).wait_for_reads(6, std::chrono::minutes(5)));
}

TEST(TransceiverOptions, IntervalIsChecked) {
  const CollectorEntry* e = find_collector("transceiver");
  ASSERT_NE(e, nullptr);
  TransceiverOptions o;
  o.interval = std::chrono::milliseconds(500);
  auto problems = e->validate(std::any(o));
  ASSERT_EQ(problems.size(), 1U);
  EXPECT_EQ(problems[0], "transceiver.interval: must be from 1s to 24h");
  o.interval = std::chrono::hours(25);
  EXPECT_EQ(e->validate(std::any(o)).size(), 1U);
  o.interval = std::chrono::hours(24);
  EXPECT_TRUE(e->validate(std::any(o)).empty());
  o.interval = std::chrono::seconds(60);
  EXPECT_TRUE(e->validate(std::any(o)).empty());
}

}  // namespace
}  // namespace rdma_exporter
