// The hw_counters collector: port hw counters from rdma netlink, and from
// sysfs hw_counters/ wherever netlink cannot give them, against the fake
// nldev kernel and sysfs fixture trees (tests/support/sysfs_tree.hpp).

#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "collectors/hw_counters/options.hpp"
#include "exporter/config.hpp"
#include "tests/fake_kernel/fake_nldev.hpp"
#include "tests/support/collector_run.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/snapshot_query.hpp"

namespace rdma_exporter {
namespace {

using testing::FakeDevice;
using testing::FakeNldev;
using testing::FakePort;
using testing::sample;

using Values = std::map<std::string, double>;

// rxe0 port 1 of the fixture "rxe": the fixture writes
// (sum of the name's bytes * 1000 + device * 100 + port * 10) into every
// hw_counters/ file, written out here by hand.
const Values kRxeFixture = {
    {"ack_deferred", 1231010},
    {"completer_retry_err", 2056010},
    {"duplicate_request", 1827010},
    {"link_downed", 1166010},
    {"out_of_seq_request", 1948010},
    {"rcvd_pkts", 976010},
    {"rcvd_rnr_err", 1288010},
    {"rcvd_seq_err", 1279010},
    {"rdma_recvs", 1062010},
    {"rdma_sends", 1056010},
    {"retry_exceeded_err", 1908010},
    {"retry_rnr_exceeded_err", 2341010},
    {"send_err", 850010},
    {"send_rnr_err", 1283010},
    {"sent_pkts", 987010},
};

// Every rdma_port_hw_<name>_total of one port, by <name>.
Values port_counters(const Snapshot& s, const std::string& device, const std::string& port) {
  Values out;
  const std::string prefix = "rdma_port_hw_";
  const std::string suffix = "_total";
  for (const auto& f : s.families) {
    if (!f.name.starts_with(prefix) || !f.name.ends_with(suffix)) continue;
    EXPECT_EQ(f.type, prometheus::MetricType::Counter) << f.name;
    for (const auto& m : f.metric) {
      const bool match =
          std::any_of(m.label.begin(), m.label.end(),
                      [&](const auto& l) { return l.name == "device" && l.value == device; }) &&
          std::any_of(m.label.begin(), m.label.end(),
                      [&](const auto& l) { return l.name == "port" && l.value == port; });
      if (!match) continue;
      const std::string name =
          f.name.substr(prefix.size(), f.name.size() - prefix.size() - suffix.size());
      EXPECT_TRUE(out.emplace(name, m.counter.value).second) << "two series of " << f.name;
    }
  }
  return out;
}

// The source label of the port's rdma_port_hw_source_info ("" when absent,
// "<several>" when there is more than one series).
std::string source_of(const Snapshot& s, const std::string& device, const std::string& port) {
  std::string found;
  for (const auto& f : s.families) {
    if (f.name != "rdma_port_hw_source_info") continue;
    EXPECT_EQ(f.type, prometheus::MetricType::Gauge);
    for (const auto& m : f.metric) {
      std::map<std::string, std::string> labels;
      for (const auto& l : m.label) labels[l.name] = l.value;
      if (labels["device"] != device || labels["port"] != port) continue;
      EXPECT_EQ(labels.size(), 3U);
      EXPECT_EQ(m.gauge.value, 1.0);
      found = found.empty() ? labels["source"] : "<several>";
    }
  }
  return found;
}

bool saw_stat_get(const FakeNldev& k) {
  return std::any_of(k.requests.begin(), k.requests.end(), [](const testing::SeenRequest& r) {
    return r.cmd == RDMA_NLDEV_CMD_STAT_GET && (r.flags & NLM_F_DUMP) == 0;
  });
}

// Cuts every device list reply short, so that it cannot be decoded.
void cut_device_list(netlink::Reply& r) {
  const auto* nlh = reinterpret_cast<const nlmsghdr*>(r.datagrams.front().data());
  if (RDMA_NL_GET_OP(nlh->nlmsg_type) == RDMA_NLDEV_CMD_GET) r.datagrams.front().resize(30);
}

class HwCountersTest : public ::testing::Test {
 protected:
  // The hw_counters collector alone, with `sysfs_root`.
  std::shared_ptr<const Snapshot> collect(const std::string& sysfs_root) {
    if (!run_) {
      kernel_ptr_ = kernel_.get();
      run_ = std::make_unique<testing::CollectorRun>(
          "hw_counters", KernelInterfaces{std::move(kernel_), nullptr, nullptr}, settings_,
          sysfs_root);
    }
    return run_->collect();
  }
  FakeNldev& kernel() { return kernel_ptr_ != nullptr ? *kernel_ptr_ : *kernel_; }
  void set_source(HwCountersOptions::Source source) {
    settings_.options<HwCountersOptions>().source = source;
  }

  // rxe0 with the counters of the fixture "rxe", through netlink.
  void add_rxe_with_fixture_values() {
    FakeDevice rxe{.index = 3, .name = "rxe0"};
    FakePort port{.index = 1, .netdev = "veth0", .netdev_index = 7};
    for (const auto& [name, value] : kRxeFixture) {
      port.counters.emplace_back(name, static_cast<uint64_t>(value));
    }
    rxe.ports.push_back(port);
    kernel_->devices.push_back(rxe);
  }

  // mlx5_0 with two ports whose netlink values differ from the fixture
  // "mlx5:1:2", so that each value tells where it came from.
  void add_mlx5_with_netlink_values() {
    FakeDevice mlx{.index = 1, .name = "mlx5_0"};
    mlx.ports.push_back(
        FakePort{.index = 1, .counters = {{"out_of_sequence", 17}, {"np_cnp_sent", 99}}});
    mlx.ports.push_back(FakePort{.index = 2, .counters = {{"out_of_sequence", 3}}});
    kernel_->devices.push_back(mlx);
  }

  CollectorSettings settings_;
  std::unique_ptr<FakeNldev> kernel_ = std::make_unique<FakeNldev>();
  FakeNldev* kernel_ptr_ = nullptr;
  std::unique_ptr<testing::CollectorRun> run_;
};

// The same fixture through both paths: netlink's STAT_GET and sysfs
// hw_counters/ give the same series with the same values; "lifespan" is no
// counter.
TEST_F(HwCountersTest, NetlinkAndSysfsGiveTheSameSeriesAndValues) {
  const std::string root = testing::make_sysfs_fixture("rxe");
  add_rxe_with_fixture_values();
  auto through_netlink = collect(root);
  EXPECT_TRUE(through_netlink->all_succeeded());
  EXPECT_EQ(port_counters(*through_netlink, "rxe0", "1"), kRxeFixture);
  EXPECT_EQ(source_of(*through_netlink, "rxe0", "1"), "netlink");

  kernel().absent = true;  // a kernel (or container) without rdma netlink
  auto through_sysfs = collect(root);
  EXPECT_TRUE(through_sysfs->all_succeeded()) << through_sysfs->outcomes[0].errors.front();
  EXPECT_EQ(port_counters(*through_sysfs, "rxe0", "1"), kRxeFixture);
  EXPECT_EQ(source_of(*through_sysfs, "rxe0", "1"), "sysfs");
  EXPECT_FALSE(testing::has_family(*through_sysfs, "rdma_port_hw_lifespan_total"));

  // The exposition lines are the same but for the source.
  EXPECT_EQ(testing::series_count(*through_sysfs, "rdma_port_hw_sent_pkts_total"), 1U);
  const std::string line = "rdma_port_hw_sent_pkts_total{device=\"rxe0\",port=\"1\"} 987010\n";
  EXPECT_NE(through_netlink->text.find(line), std::string::npos) << through_netlink->text;
  EXPECT_NE(through_sysfs->text.find(line), std::string::npos) << through_sysfs->text;
}

// STAT_GET failing on one port falls back for that port only.
TEST_F(HwCountersTest, OnlyThePortWhoseStatGetFailsIsReadFromSysfs) {
  add_mlx5_with_netlink_values();
  kernel_->devices[0].ports[1].stat_error = EIO;
  auto s = collect(testing::make_sysfs_fixture("mlx5:1:2"));
  EXPECT_TRUE(s->all_succeeded()) << s->outcomes[0].errors.front();
  EXPECT_EQ(port_counters(*s, "mlx5_0", "1"),
            (Values{{"out_of_sequence", 17}, {"np_cnp_sent", 99}}));
  EXPECT_EQ(source_of(*s, "mlx5_0", "1"), "netlink");
  const Values port2 = port_counters(*s, "mlx5_0", "2");
  EXPECT_EQ(port2.size(), 28U);  // the fixture's 29 files less lifespan
  EXPECT_EQ(port2.at("out_of_sequence"), 1604020.0);
  EXPECT_EQ(port2.at("np_cnp_sent"), 1175020.0);
  EXPECT_EQ(port2.at("rx_write_requests"), 1871020.0);
  EXPECT_EQ(port2.count("lifespan"), 0U);
  EXPECT_EQ(source_of(*s, "mlx5_0", "2"), "sysfs");
}

// EINVAL is also what an old kernel without STAT_GET answers, and what a
// driver answers that fails to read its counters.
TEST_F(HwCountersTest, EinvalFallsBackToo) {
  add_mlx5_with_netlink_values();
  kernel_->devices[0].ports[0].stat_error = EINVAL;
  auto s = collect(testing::make_sysfs_fixture("mlx5:1:2"));
  EXPECT_TRUE(s->all_succeeded());
  EXPECT_EQ(sample(*s, "rdma_port_hw_out_of_sequence_total", {{"device", "mlx5_0"}, {"port", "1"}}),
            1604010.0);
  EXPECT_EQ(source_of(*s, "mlx5_0", "1"), "sysfs");
  EXPECT_EQ(sample(*s, "rdma_port_hw_out_of_sequence_total", {{"device", "mlx5_0"}, {"port", "2"}}),
            3.0);
  EXPECT_EQ(source_of(*s, "mlx5_0", "2"), "netlink");
}

// A port without counters in either place (siw, efa) exports nothing and
// is no failure; a netlink error other than EINVAL/EOPNOTSUPP with nothing
// in sysfs still is one.
TEST_F(HwCountersTest, NoCountersAnywhere) {
  FakeDevice efa{.index = 2, .name = "efa_0"};
  efa.ports.push_back(FakePort{.index = 1, .stat_error = EINVAL});
  kernel_->devices.push_back(efa);
  add_mlx5_with_netlink_values();
  kernel_->devices[1].ports[1].stat_error = EPERM;
  auto s = collect(testing::make_sysfs_fixture("efa"));  // no port hw_counters/
  EXPECT_EQ(source_of(*s, "efa_0", "1"), "");
  EXPECT_TRUE(port_counters(*s, "efa_0", "1").empty());
  EXPECT_EQ(source_of(*s, "mlx5_0", "2"), "");
  ASSERT_EQ(s->outcomes[0].errors.size(), 1U);
  EXPECT_EQ(s->outcomes[0].errors[0].rfind("mlx5_0 port 2: ", 0), 0U) << s->outcomes[0].errors[0];
  EXPECT_NE(s->outcomes[0].errors[0].find("Operation not permitted"), std::string::npos);
  EXPECT_EQ(sample(*s, "rdma_port_hw_out_of_sequence_total", {{"device", "mlx5_0"}, {"port", "1"}}),
            17.0);
}

// `source: netlink` never reads sysfs; a failing port is an error as it
// always was.
TEST_F(HwCountersTest, SourceNetlinkDoesNotFallBack) {
  set_source(HwCountersOptions::Source::netlink);
  add_mlx5_with_netlink_values();
  kernel_->devices[0].ports[1].stat_error = EIO;
  auto s = collect(testing::make_sysfs_fixture("mlx5:1:2"));
  ASSERT_EQ(s->outcomes[0].errors.size(), 1U);
  EXPECT_EQ(s->outcomes[0].errors[0].rfind("mlx5_0 port 2: ", 0), 0U) << s->outcomes[0].errors[0];
  EXPECT_NE(s->outcomes[0].errors[0].find("Input/output error"), std::string::npos);
  EXPECT_TRUE(port_counters(*s, "mlx5_0", "2").empty());
  EXPECT_EQ(source_of(*s, "mlx5_0", "2"), "");
  EXPECT_EQ(source_of(*s, "mlx5_0", "1"), "netlink");
}

// `source: sysfs` reads every port from sysfs and sends no STAT_GET.
TEST_F(HwCountersTest, SourceSysfsReadsOnlySysfs) {
  set_source(HwCountersOptions::Source::sysfs);
  add_mlx5_with_netlink_values();
  auto s = collect(testing::make_sysfs_fixture("mlx5:1:2 rxe"));
  EXPECT_TRUE(s->all_succeeded());
  EXPECT_FALSE(saw_stat_get(kernel()));
  EXPECT_EQ(sample(*s, "rdma_port_hw_out_of_sequence_total", {{"device", "mlx5_0"}, {"port", "1"}}),
            1604010.0);
  EXPECT_EQ(sample(*s, "rdma_port_hw_out_of_sequence_total", {{"device", "mlx5_0"}, {"port", "2"}}),
            1604020.0);
  EXPECT_EQ(port_counters(*s, "rxe0", "1"), kRxeFixture);  // netlink does not list rxe0 here
  EXPECT_EQ(source_of(*s, "mlx5_0", "1"), "sysfs");
  EXPECT_EQ(source_of(*s, "mlx5_0", "2"), "sysfs");
  EXPECT_EQ(source_of(*s, "rxe0", "1"), "sysfs");
}

// With netlink working, the automatic source asks it first for every port.
TEST_F(HwCountersTest, AutomaticSourcePrefersNetlink) {
  add_mlx5_with_netlink_values();
  auto s = collect(testing::make_sysfs_fixture("mlx5:1:2 rxe"));
  EXPECT_TRUE(saw_stat_get(kernel()));
  EXPECT_EQ(port_counters(*s, "mlx5_0", "2"), (Values{{"out_of_sequence", 3}}));
  EXPECT_EQ(source_of(*s, "mlx5_0", "2"), "netlink");
  // A device netlink does not list is not read from sysfs.
  EXPECT_TRUE(port_counters(*s, "rxe0", "1").empty());
  EXPECT_EQ(source_of(*s, "rxe0", "1"), "");
}

// A device whose port list fails has its ports listed by sysfs.
TEST_F(HwCountersTest, DeviceWhosePortListFailsIsReadFromSysfs) {
  add_mlx5_with_netlink_values();
  kernel_->devices[0].port_list_error = EIO;
  auto s = collect(testing::make_sysfs_fixture("mlx5:1:2"));
  EXPECT_TRUE(s->all_succeeded());
  EXPECT_EQ(sample(*s, "rdma_port_hw_np_cnp_sent_total", {{"device", "mlx5_0"}, {"port", "1"}}),
            1175010.0);
  EXPECT_EQ(sample(*s, "rdma_port_hw_np_cnp_sent_total", {{"device", "mlx5_0"}, {"port", "2"}}),
            1175020.0);
  EXPECT_EQ(source_of(*s, "mlx5_0", "1"), "sysfs");
  EXPECT_EQ(source_of(*s, "mlx5_0", "2"), "sysfs");
}

// A device list netlink cannot decode: sysfs lists the ports, and the
// collector succeeds.
TEST_F(HwCountersTest, FailedDeviceListFallsBackToSysfs) {
  add_rxe_with_fixture_values();
  kernel_->tamper = cut_device_list;
  auto s = collect(testing::make_sysfs_fixture("rxe"));
  EXPECT_TRUE(s->all_succeeded()) << s->outcomes[0].errors.front();
  EXPECT_EQ(port_counters(*s, "rxe0", "1"), kRxeFixture);
  EXPECT_EQ(source_of(*s, "rxe0", "1"), "sysfs");
}

// The listing error fails the collector when sysfs has nothing either.
TEST_F(HwCountersTest, FailedDeviceListWithoutSysfsIsAFailure) {
  add_rxe_with_fixture_values();
  kernel_->tamper = cut_device_list;
  auto s = collect("/nonexistent");
  ASSERT_EQ(s->outcomes[0].errors.size(), 1U);
  EXPECT_EQ(s->outcomes[0].errors[0].rfind("list devices: ", 0), 0U) << s->outcomes[0].errors[0];
  EXPECT_TRUE(port_counters(*s, "rxe0", "1").empty());
}

// A counter file that cannot be read or parsed fails the collector with the
// file's name; the port's other counters are exported.
TEST_F(HwCountersTest, UnreadableSysfsCounterIsReported) {
  const auto root =
      std::filesystem::path(::testing::TempDir()) / ("rdma_hw_" + std::to_string(::getpid()));
  const auto dir = root / "class/infiniband/rxe0/ports/1/hw_counters";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "sent_pkts") << "12\n";
  std::ofstream(dir / "rcvd_pkts") << "many\n";
  std::ofstream(dir / "lifespan") << "10\n";
  kernel_->absent = true;
  auto s = collect(root.string());
  ASSERT_EQ(s->outcomes[0].errors.size(), 1U);
  EXPECT_NE(s->outcomes[0].errors[0].find("rxe0/ports/1/hw_counters/rcvd_pkts: not a counter"),
            std::string::npos)
      << s->outcomes[0].errors[0];
  EXPECT_EQ(port_counters(*s, "rxe0", "1"), (Values{{"sent_pkts", 12}}));
  EXPECT_EQ(source_of(*s, "rxe0", "1"), "sysfs");
  std::filesystem::remove_all(root);
}

TEST(HwCountersOptions, SourceParses) {
  Config c;
  EXPECT_EQ(c.collectors.options<HwCountersOptions>().source, HwCountersOptions::Source::automatic);
  EXPECT_TRUE(parse_config("hw_counters:\n  source: sysfs\n", "t.yml", c).empty());
  EXPECT_EQ(c.collectors.options<HwCountersOptions>().source, HwCountersOptions::Source::sysfs);
  EXPECT_TRUE(parse_config("hw_counters: {source: netlink}\n", "t.yml", c).empty());
  EXPECT_EQ(c.collectors.options<HwCountersOptions>().source, HwCountersOptions::Source::netlink);
  EXPECT_TRUE(parse_config("hw_counters: {source: auto}\n", "t.yml", c).empty());
  EXPECT_EQ(c.collectors.options<HwCountersOptions>().source, HwCountersOptions::Source::automatic);
  const auto errors = parse_config("hw_counters:\n  source: both\n", "t.yml", c);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0],
            "t.yml:2:11: hw_counters.source: expected one of auto, netlink, sysfs, got \"both\"");
}

}  // namespace
}  // namespace rdma_exporter
