// The ethtool path: codecs fed buffers in the kernel's struct layouts, the
// reader against a fake SIOCETHTOOL, the mapping tables, and whole
// collections with mlx5-, bnxt_en-, ice- and veth-like netdevs.

#include <gtest/gtest.h>
#include <linux/ethtool.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <functional>

#include "collectors/ethtool/mapping.hpp"
#include "collectors/ethtool/options.hpp"
#include "common/kernel/netdev/codec.hpp"
#include "common/kernel/netdev/reader.hpp"
#include "exporter/collection.hpp"
#include "tests/fake_kernel/fake_dcb.hpp"
#include "tests/fake_kernel/fake_ethtool.hpp"
#include "tests/fake_kernel/fake_nldev.hpp"
#include "tests/support/collector_run.hpp"
#include "tests/support/snapshot_query.hpp"

namespace rdma_exporter {
namespace {

using ethtool::Bytes;
using testing::FakeEthtool;
using testing::FakeNetdev;
using testing::sample;
using testing::series_count;

// ------------------------------------------------------------------ codecs

TEST(EthtoolCodec, DriverName) {
  auto d = ethtool::parse_drvinfo(testing::drvinfo_answer("mlx5_core", 3));
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(*d, "mlx5_core");
  Bytes full = testing::drvinfo_answer("", 0);
  std::memset(full.data() + offsetof(ethtool_drvinfo, driver), 'x', 32);  // no NUL
  EXPECT_EQ(ethtool::parse_drvinfo(full).value(), std::string(32, 'x'));
  Bytes short_answer = testing::drvinfo_answer("veth", 0);
  short_answer.resize(20);
  auto bad = ethtool::parse_drvinfo(short_answer);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, EBADMSG);
  EXPECT_NE(bad.error().message.find("shorter than its header"), std::string::npos);
  EXPECT_FALSE(ethtool::parse_drvinfo(testing::stats_count_answer(3)));  // another command
}

TEST(EthtoolCodec, StatisticsCount) {
  EXPECT_EQ(ethtool::parse_stats_count(testing::stats_count_answer(42)).value(),
            std::optional<uint32_t>(42));
  EXPECT_EQ(ethtool::parse_stats_count(testing::stats_count_answer(std::nullopt)).value(),
            std::nullopt);  // the driver has no statistics
  Bytes no_count = testing::stats_count_answer(7);
  no_count.resize(sizeof(ethtool_sset_info));
  EXPECT_FALSE(ethtool::parse_stats_count(no_count));
  Bytes other_sets = testing::stats_count_answer(7);
  other_sets[8] |= 1U << ETH_SS_TEST;  // sset_mask, little endian
  EXPECT_FALSE(ethtool::parse_stats_count(other_sets));
  auto huge = ethtool::parse_stats_count(testing::stats_count_answer(ethtool::kMaxStats + 1));
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message.find("counts"), std::string::npos);
}

TEST(EthtoolCodec, RequestsAreTheKernelStructs) {
  const Bytes count = ethtool::build_stats_count();
  ethtool_sset_info info{};
  std::memcpy(&info, count.data(), sizeof info);
  EXPECT_EQ(info.cmd, static_cast<uint32_t>(ETHTOOL_GSSET_INFO));
  EXPECT_EQ(info.sset_mask, 1ULL << ETH_SS_STATS);
  EXPECT_EQ(count.size(), sizeof info + sizeof(uint32_t));

  const Bytes names = ethtool::build_stat_names(10, ethtool::room_for(10));
  ethtool_gstrings g{};
  std::memcpy(&g, names.data(), sizeof g);
  EXPECT_EQ(g.cmd, static_cast<uint32_t>(ETHTOOL_GSTRINGS));
  EXPECT_EQ(g.string_set, static_cast<uint32_t>(ETH_SS_STATS));
  EXPECT_EQ(g.len, 10U);
  EXPECT_EQ(names.size(), sizeof g + ethtool::room_for(10) * ETH_GSTRING_LEN);
  EXPECT_GT(ethtool::room_for(10), 10U);

  const Bytes values = ethtool::build_stat_values(10, 12);
  ethtool_stats st{};
  std::memcpy(&st, values.data(), sizeof st);
  EXPECT_EQ(st.cmd, static_cast<uint32_t>(ETHTOOL_GSTATS));
  EXPECT_EQ(values.size(), sizeof st + 12 * sizeof(uint64_t));
}

TEST(EthtoolCodec, NamesAndValues) {
  const std::string longest(ETH_GSTRING_LEN, 'n');  // fills its slot, no NUL
  auto names =
      ethtool::parse_stat_names(testing::stat_names_answer({"rx_prio3_pause", longest}, 4));
  ASSERT_TRUE(names) << names.error().message;
  EXPECT_EQ(*names, (std::vector<std::string>{"rx_prio3_pause", longest}));
  auto values = ethtool::parse_stat_values(testing::stat_values_answer({1, 1ULL << 60}, 2));
  ASSERT_TRUE(values);
  EXPECT_EQ(*values, (std::vector<uint64_t>{1, 1ULL << 60}));
  EXPECT_TRUE(ethtool::parse_stat_values(testing::stat_values_answer({}, 0)).value().empty());
}

TEST(EthtoolCodec, AnswersLongerThanTheirBufferAreRejected) {
  Bytes names = testing::stat_names_answer({"a", "b", "c"}, 3);
  names.resize(names.size() - ETH_GSTRING_LEN);  // the kernel claims 3, the buffer holds 2
  auto n = ethtool::parse_stat_names(names);
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("reports 3 names for a buffer of 2"), std::string::npos);
  Bytes values = testing::stat_values_answer({1, 2, 3}, 3);
  values.resize(values.size() - 1);
  EXPECT_FALSE(ethtool::parse_stat_values(values));
  Bytes other_set = testing::stat_names_answer({"a"}, 1);
  other_set[4] = ETH_SS_TEST;  // string_set
  EXPECT_FALSE(ethtool::parse_stat_names(other_set));
  EXPECT_FALSE(ethtool::parse_stat_names(Bytes(5, 0)));
}

// What each parser is, for the tables below: its answer's fixed header and
// a valid answer.
struct AnswerKind {
  const char* name;
  std::size_t header;
  Bytes answer;
  std::function<Status(std::span<const uint8_t>)> parse;
};

template <typename R>
Status status_of(const Result<R>& r) {
  return r ? ok_status() : Status(r.error());
}

std::vector<AnswerKind> answer_kinds() {
  return {
      {"ETHTOOL_GDRVINFO", sizeof(ethtool_drvinfo), testing::drvinfo_answer("mlx5_core", 3),
       [](auto a) { return status_of(ethtool::parse_drvinfo(a)); }},
      {"ETHTOOL_GSSET_INFO", sizeof(ethtool_sset_info), testing::stats_count_answer(42),
       [](auto a) { return status_of(ethtool::parse_stats_count(a)); }},
      {"ETHTOOL_GSTRINGS", sizeof(ethtool_gstrings),
       testing::stat_names_answer({"rx_packets", "tx_packets"}, 2),
       [](auto a) { return status_of(ethtool::parse_stat_names(a)); }},
      {"ETHTOOL_GSTATS", sizeof(ethtool_stats), testing::stat_values_answer({7, 9}, 2),
       [](auto a) { return status_of(ethtool::parse_stat_values(a)); }},
  };
}

// The command word every answer starts with is compared whole: an answer
// whose command is wrong in any one of its four bytes is refused.
TEST(EthtoolCodec, ACommandWrongInAnyOfItsBytesIsRefused) {
  for (const AnswerKind& k : answer_kinds()) {
    ASSERT_TRUE(k.parse(k.answer)) << k.name;
    for (std::size_t byte = 0; byte < sizeof(uint32_t); ++byte) {
      Bytes bad = k.answer;
      bad[byte] ^= 0x40;  // cmd is the first field of every ethtool struct
      Status s = k.parse(bad);
      ASSERT_FALSE(s) << k.name << " byte " << byte;
      EXPECT_EQ(s.error().code, EBADMSG);
      EXPECT_NE(s.error().message.find(std::string(k.name) + " carries command"), std::string::npos)
          << s.error().message;
    }
  }
}

// An answer shorter than its fixed header, by one byte or more, is refused
// before any field of it is read.
TEST(EthtoolCodec, AnAnswerShorterThanItsHeaderIsRefused) {
  for (const AnswerKind& k : answer_kinds()) {
    for (std::size_t size = 0; size < k.header; ++size) {
      const Bytes cut(k.answer.begin(), k.answer.begin() + static_cast<long>(size));
      Status s = k.parse(cut);
      ASSERT_FALSE(s) << k.name << " of " << size << " bytes";
      EXPECT_EQ(s.error().message, "malformed ethtool answer: " + std::string(k.name) + " is " +
                                       std::to_string(size) + " bytes, shorter than its header");
    }
  }
}

// GSSET_INFO's set mask is checked in all its eight bytes: a set asked
// about by nobody, in any byte, makes the answer one for another request.
TEST(EthtoolCodec, ASetMaskWithAnotherSetInAnyByteIsRefused) {
  const Bytes good = testing::stats_count_answer(42);
  ASSERT_EQ(ethtool::parse_stats_count(good).value(), std::optional<uint32_t>(42));
  for (std::size_t byte = 0; byte < sizeof(uint64_t); ++byte) {
    Bytes bad = good;
    bad[offsetof(ethtool_sset_info, sset_mask) + byte] ^= 0x80;  // bit 8 * byte + 7, never STATS
    auto r = ethtool::parse_stats_count(bad);
    ASSERT_FALSE(r) << "byte " << byte;
    EXPECT_NE(r.error().message.find("sets it was not asked about"), std::string::npos)
        << r.error().message;
  }
}

// GSTRINGS' string set is compared whole, in each of its four bytes.
TEST(EthtoolCodec, AStringSetWrongInAnyOfItsBytesIsRefused) {
  const Bytes good = testing::stat_names_answer({"rx_packets"}, 1);
  ASSERT_TRUE(ethtool::parse_stat_names(good));
  for (std::size_t byte = 0; byte < sizeof(uint32_t); ++byte) {
    Bytes bad = good;
    bad[offsetof(ethtool_gstrings, string_set) + byte] ^= 0x40;
    auto r = ethtool::parse_stat_names(bad);
    ASSERT_FALSE(r) << "byte " << byte;
    EXPECT_NE(r.error().message.find("string set"), std::string::npos) << r.error().message;
  }
}

// ------------------------------------------------------------------ reader

FakeNetdev mlx5_netdev() {
  FakeNetdev n{.driver = "mlx5_core"};
  n.stats = {{"rx_packets", 1000},   {"rx0_packets", 600},   {"rx_out_of_buffer", 4},
             {"rx_discards_phy", 9}, {"tx_discards_phy", 1}, {"rx_ecn_mark", 77}};
  for (int p = 0; p < 8; ++p) {
    const std::string prio = std::to_string(p);
    const auto v = static_cast<uint64_t>(p);
    n.stats.emplace_back("rx_prio" + prio + "_bytes", 1000 + v);
    n.stats.emplace_back("rx_prio" + prio + "_packets", 100 + v);
    n.stats.emplace_back("tx_prio" + prio + "_bytes", 2000 + v);
    n.stats.emplace_back("tx_prio" + prio + "_packets", 200 + v);
    n.stats.emplace_back("rx_prio" + prio + "_discards", v);
    n.stats.emplace_back("rx_prio" + prio + "_buf_discard", 10 + v);
    n.stats.emplace_back("rx_prio" + prio + "_cong_discard", 20 + v);
    n.stats.emplace_back("rx_prio" + prio + "_marked", 30 + v);
  }
  // PFC counters exist only for priorities with PFC on.
  n.stats.emplace_back("rx_prio3_pause", 500);
  n.stats.emplace_back("rx_prio3_pause_duration", 2500000);  // microseconds
  n.stats.emplace_back("rx_prio3_pause_transition", 250);
  n.stats.emplace_back("tx_prio3_pause", 40);
  n.stats.emplace_back("tx_prio3_pause_duration", 1500);
  return n;
}

TEST(EthtoolReader, ReadsDriverNamesAndValues) {
  FakeEthtool k;
  k.netdevs["ens1f0np0"] = mlx5_netdev();
  auto s = ethtool::read_driver_stats(k, "ens1f0np0");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->driver, "mlx5_core");
  ASSERT_EQ(s->names.size(), k.netdevs["ens1f0np0"].stats.size());
  EXPECT_EQ(s->names[2], "rx_out_of_buffer");
  EXPECT_EQ(s->values[2], 4U);
  EXPECT_EQ(k.calls.size(), 4U);  // GDRVINFO, GSSET_INFO, GSTRINGS, GSTATS
}

TEST(EthtoolReader, DriverWithoutStatisticsGivesNone) {
  FakeEthtool k;
  k.netdevs["lo"] = FakeNetdev{.driver = "", .has_stats = false};
  auto s = ethtool::read_driver_stats(k, "lo");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_TRUE(s->names.empty());
  EXPECT_EQ(k.calls.size(), 2U);  // no GSTRINGS or GSTATS
}

TEST(EthtoolReader, AGrowingSetIsReadAgainWithoutOverrunningBuffers) {
  FakeEthtool k;
  k.netdevs["eth0"] = testing::veth_netdev();
  k.netdevs["eth0"].grow_after_count = 8;  // 10 statistics become 18 mid-read
  auto s = ethtool::read_driver_stats(k, "eth0");
  ASSERT_TRUE(s) << s.error().message;  // no EFAULT: the buffers had room
  EXPECT_EQ(s->names.size(), 18U);
  EXPECT_EQ(s->values.size(), 18U);
  EXPECT_EQ(k.calls.size(), 7U);  // GDRVINFO, then two rounds of three
}

TEST(EthtoolReader, ErrorsCarryTheErrno) {
  FakeEthtool k;
  auto gone = ethtool::read_driver_stats(k, "nosuch0");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ENODEV);
  k.netdevs["eth1"] = FakeNetdev{.driver = "x", .error = EIO};
  auto io = ethtool::read_driver_stats(k, "eth1");
  ASSERT_FALSE(io);
  EXPECT_EQ(io.error().code, EIO);
  EXPECT_NE(io.error().message.find("SIOCETHTOOL on eth1"), std::string::npos);
}

// ------------------------------------------------------------------ mapping

TEST(EthtoolMapping, BuiltInTablesAreValidAndCoverThreeDrivers) {
  std::set<std::string> drivers;
  for (const auto& m : ethtool::builtin_mappings()) {
    EXPECT_EQ(ethtool::mapping_problem(m), "") << m.stat;
    drivers.insert(m.driver);
  }
  EXPECT_EQ(drivers, (std::set<std::string>{"mlx5_core", "bnxt_en", "ice"}));
}

TEST(EthtoolMapping, ProblemsOfConfiguredMappings) {
  auto problem = [](EthtoolMapping m) { return ethtool::mapping_problem(m); };
  EXPECT_NE(problem({.stat = "x", .metric = "pause"}).find("unknown metric"), std::string::npos);
  EXPECT_NE(problem({.stat = "rx_pause", .metric = "pfc_pause_frames", .direction = "rx"})
                .find("capture group"),
            std::string::npos);
  EXPECT_NE(problem({.stat = "p([0-7])", .metric = "pfc_pause_frames"}).find("direction"),
            std::string::npos);
  EXPECT_NE(problem({.stat = "d", .metric = "discards"}).find("reason"), std::string::npos);
  EXPECT_NE(problem({.stat = "d", .metric = "discards", .reason = "Bad Reason"}).find("reason"),
            std::string::npos);
  EXPECT_NE(problem({.stat = "d", .metric = "discards", .direction = "rx", .reason = "r"})
                .find("no direction"),
            std::string::npos);
  EXPECT_NE(problem({.stat = "(", .metric = "discards", .reason = "r"}).find("regular expression"),
            std::string::npos);
  EXPECT_NE(problem({.stat = "d", .metric = "discards", .reason = "r", .scale = 0}).find("scale"),
            std::string::npos);
  EXPECT_EQ(problem({.driver = "ionic",
                     .stat = "rx_pfc_([0-7])",
                     .metric = "pfc_pause_frames",
                     .direction = "rx"}),
            "");
}

TEST(EthtoolMapping, ResolvesPerDriverAndConfiguredMappingsComeFirst) {
  const ethtool::StatMapper builtin({});
  auto t = builtin.resolve(
      "mlx5_core", {"rx_prio3_pause", "tx_prio7_pause_duration", "rx_prio3_pause_transition",
                    "rx_prio9_pause", "rx_out_of_buffer"});
  ASSERT_EQ(t.size(), 5U);
  EXPECT_STREQ(t[0].family->id, "pfc_pause_frames");
  EXPECT_EQ(t[0].priority, "3");
  EXPECT_EQ(t[0].direction, "rx");
  EXPECT_STREQ(t[1].family->id, "pfc_pause_duration_seconds");
  EXPECT_DOUBLE_EQ(t[1].scale, 1e-6);
  EXPECT_EQ(t[2].family, nullptr);  // unmapped: only available raw
  EXPECT_EQ(t[3].family, nullptr);  // not a priority
  EXPECT_EQ(t[4].reason, "rx_out_of_buffer");
  // Same names, another driver: nothing.
  EXPECT_EQ(builtin.resolve("veth", {"rx_prio3_pause"})[0].family, nullptr);
  auto bnxt = builtin.resolve("bnxt_en", {"tx_pfc_ena_frames_pri5", "pfc_pri5_rx_duration_us"});
  EXPECT_EQ(bnxt[0].priority, "5");
  EXPECT_EQ(bnxt[0].direction, "tx");
  EXPECT_STREQ(bnxt[1].family->id, "pfc_pause_duration_seconds");
  auto ice = builtin.resolve(
      "ice", {"rx_priority_2_xoff.nic", "rx_priority_2_xon.nic", "rx_priority_2_xoffXnic"});
  EXPECT_EQ(ice[0].priority, "2");
  EXPECT_EQ(ice[1].family, nullptr);
  EXPECT_EQ(ice[2].family, nullptr);  // the dot is literal

  const ethtool::StatMapper configured(
      {{.driver = "mlx5_core",
        .stat = "rx_prio([0-7])_pause",
        .metric = "cnp_packets",
        .direction = "rx"},
       {.stat = "rdma_cnp_(rx|tx)", .metric = "cnp_packets", .direction = "tx"}});
  auto c = configured.resolve("mlx5_core", {"rx_prio3_pause", "rdma_cnp_tx", "tx_prio3_pause"});
  EXPECT_STREQ(c[0].family->id, "cnp_packets");  // before the built-in mapping
  EXPECT_TRUE(c[0].priority.empty());            // the family has no priority
  EXPECT_STREQ(c[1].family->id, "cnp_packets");
  EXPECT_STREQ(c[2].family->id, "pfc_pause_frames");
}

// ------------------------------------------------------------------ collections

class EthtoolCollectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::FakeDevice mlx{.index = 1, .name = "mlx5_0"};
    mlx.ports.push_back(testing::FakePort{.index = 1, .netdev = "ens1f0np0", .netdev_index = 4});
    testing::FakeDevice rxe{.index = 2, .name = "rxe0"};
    rxe.ports.push_back(testing::FakePort{.index = 1, .netdev = "veth0", .netdev_index = 5});
    testing::FakeDevice ib{.index = 3, .name = "mlx5_2", .protocol = "ib"};
    ib.ports.push_back(testing::FakePort{.index = 1, .lid = 3});
    nldev_->devices = {mlx, rxe, ib};
    ethtool_->netdevs["ens1f0np0"] = mlx5_netdev();
    ethtool_->netdevs["veth0"] = testing::veth_netdev();
  }

  // The ethtool collector alone, as its registry entry makes it.
  std::shared_ptr<const Snapshot> collect() {
    if (!run_) {
      ethtool_ptr_ = ethtool_.get();
      run_ = std::make_unique<testing::CollectorRun>(
          "ethtool",
          KernelInterfaces{std::move(nldev_), std::make_unique<testing::FakeDcb>(),
                           std::move(ethtool_)},
          settings_);
    }
    return run_->collect();
  }
  FakeEthtool& fake() { return ethtool_ptr_ != nullptr ? *ethtool_ptr_ : *ethtool_; }
  const CollectorOutcome& outcome(const Snapshot& s) {
    return *std::find_if(s.outcomes.begin(), s.outcomes.end(),
                         [](const auto& o) { return o.name == "ethtool"; });
  }

  CollectorSettings settings_;
  std::unique_ptr<testing::FakeNldev> nldev_ = std::make_unique<testing::FakeNldev>();
  std::unique_ptr<FakeEthtool> ethtool_ = std::make_unique<FakeEthtool>();
  FakeEthtool* ethtool_ptr_ = nullptr;
  std::unique_ptr<testing::CollectorRun> run_;
};

TEST_F(EthtoolCollectionTest, Mlx5PriorityCountersBecomeMetrics) {
  auto s = collect();
  EXPECT_TRUE(s->all_succeeded());
  const Labels port{{"device", "mlx5_0"}, {"port", "1"}, {"netdev", "ens1f0np0"}};
  auto with = [&](Labels extra) {
    Labels l = port;
    l.insert(l.end(), extra.begin(), extra.end());
    return l;
  };
  EXPECT_EQ(sample(*s, "rdma_netdev_pfc_pause_frames_total",
                   with({{"priority", "3"}, {"direction", "rx"}})),
            500.0);
  EXPECT_EQ(sample(*s, "rdma_netdev_pfc_pause_frames_total",
                   with({{"priority", "3"}, {"direction", "tx"}})),
            40.0);
  EXPECT_EQ(series_count(*s, "rdma_netdev_pfc_pause_frames_total"), 2U);
  EXPECT_DOUBLE_EQ(sample(*s, "rdma_netdev_pfc_pause_duration_seconds_total",
                          with({{"priority", "3"}, {"direction", "rx"}})),
                   2.5);
  EXPECT_DOUBLE_EQ(
      sample(*s, "rdma_netdev_pfc_pause_duration_seconds_total", with({{"direction", "tx"}})),
      0.0015);
  EXPECT_EQ(series_count(*s, "rdma_netdev_priority_bytes_total"), 16U);
  EXPECT_EQ(sample(*s, "rdma_netdev_priority_bytes_total",
                   with({{"priority", "7"}, {"direction", "tx"}})),
            2007.0);
  EXPECT_EQ(sample(*s, "rdma_netdev_priority_packets_total",
                   with({{"priority", "0"}, {"direction", "rx"}})),
            100.0);
  EXPECT_EQ(series_count(*s, "rdma_netdev_priority_discards_total"), 24U);
  EXPECT_EQ(sample(*s, "rdma_netdev_priority_discards_total",
                   with({{"priority", "5"}, {"reason", "host_congestion"}})),
            25.0);
  EXPECT_EQ(sample(*s, "rdma_netdev_ecn_marked_packets_total", with({{"priority", "1"}})), 31.0);
  EXPECT_EQ(sample(*s, "rdma_netdev_discards_total", with({{"reason", "rx_out_of_buffer"}})), 4.0);
  EXPECT_EQ(sample(*s, "rdma_netdev_discards_total", with({{"reason", "rx_port"}})), 9.0);
  EXPECT_EQ(sample(*s, "rdma_netdev_discards_total", with({{"reason", "tx_port"}})), 1.0);
  // veth has no mapping: nothing mapped, and no raw statistics unless asked.
  EXPECT_TRUE(std::isnan(sample(*s, "rdma_netdev_discards_total", {{"netdev", "veth0"}})));
  EXPECT_FALSE(testing::has_family(*s, "rdma_netdev_ethtool_stat"));
  // The InfiniBand port has no netdev: never asked.
  for (const auto& [netdev, cmd] : fake().calls) EXPECT_NE(netdev, "");
}

TEST_F(EthtoolCollectionTest, RawStatisticsOnRequestFilteredByName) {
  settings_.options<EthtoolOptions>().raw_stats = true;
  auto s = collect();
  EXPECT_EQ(series_count(*s, "rdma_netdev_ethtool_stat"),
            testing::veth_netdev().stats.size() + mlx5_netdev().stats.size());
  EXPECT_EQ(sample(*s, "rdma_netdev_ethtool_stat",
                   {{"device", "rxe0"}, {"netdev", "veth0"}, {"name", "peer_ifindex"}}),
            5.0);
  EXPECT_EQ(sample(*s, "rdma_netdev_ethtool_stat",
                   {{"netdev", "ens1f0np0"}, {"name", "rx_prio3_pause_transition"}}),
            250.0);

  settings_.options<EthtoolOptions>().raw_stats_include = {"peer_.*",
                                                           "rx_prio[0-9]_pause_transition"};
  run_->reconfigure(settings_);
  s = run_->collect();
  EXPECT_EQ(series_count(*s, "rdma_netdev_ethtool_stat"), 2U);
}

TEST_F(EthtoolCollectionTest, ValuesFollowTheDriverAndRenamedStatisticsAreMappedAgain) {
  collect();
  auto& stats = fake().netdevs["ens1f0np0"].stats;
  auto it = std::find_if(stats.begin(), stats.end(),
                         [](const auto& st) { return st.first == "rx_prio3_pause"; });
  it->second = 900;
  auto s = run_->collect();
  EXPECT_EQ(
      sample(*s, "rdma_netdev_pfc_pause_frames_total", {{"priority", "3"}, {"direction", "rx"}}),
      900.0);
  // PFC turned on for priority 4: the driver adds its counters.
  stats.emplace_back("rx_prio4_pause", 8);
  s = run_->collect();
  EXPECT_EQ(
      sample(*s, "rdma_netdev_pfc_pause_frames_total", {{"priority", "4"}, {"direction", "rx"}}),
      8.0);
}

TEST_F(EthtoolCollectionTest, ConfiguredMappingsAndOneSeriesPerLabelSet) {
  // Two statistics landing on one series: the first one wins.
  settings_.options<EthtoolOptions>().mappings = {
      {.stat = "rx_queue_0_drops", .metric = "discards", .reason = "rx_queue"},
      {.stat = "rx_queue_0_xdp_drops", .metric = "discards", .reason = "rx_queue"},
      {.driver = "veth", .stat = "peer_ifindex", .metric = "ecn_marked_packets"}};
  fake().netdevs["veth0"].stats[3].second = 12;  // rx_queue_0_drops
  auto s = collect();
  EXPECT_EQ(sample(*s, "rdma_netdev_discards_total", {{"netdev", "veth0"}, {"reason", "rx_queue"}}),
            12.0);
  EXPECT_EQ(sample(*s, "rdma_netdev_ecn_marked_packets_total", {{"netdev", "veth0"}}), 5.0);
  EXPECT_FALSE(s->text.empty());
}

TEST_F(EthtoolCollectionTest, MissingNetdevIsQuietOtherErrorsNameTheNetdev) {
  fake().netdevs.erase("veth0");  // gone, or in another network namespace
  auto s = collect();
  EXPECT_TRUE(s->all_succeeded());
  fake().netdevs["ens1f0np0"].error = EIO;
  s = run_->collect();
  ASSERT_EQ(outcome(*s).errors.size(), 1U);
  EXPECT_NE(outcome(*s).errors[0].find("ens1f0np0 (mlx5_0 port 1)"), std::string::npos);
  EXPECT_FALSE(testing::has_family(*s, "rdma_netdev_priority_bytes_total"));
}

TEST_F(EthtoolCollectionTest, OtherDriversTables) {
  FakeNetdev bnxt{.driver = "bnxt_en",
                  .stats = {{"rx_pfc_ena_frames_pri3", 11},
                            {"tx_pfc_ena_frames_pri3", 12},
                            {"pfc_pri3_rx_duration_us", 3000000},
                            {"pfc_pri3_tx_duration_us", 1000000},
                            {"rx_bytes_pri3", 13},
                            {"tx_packets_pri3", 14},
                            {"rx_stat_discard", 15}}};
  FakeNetdev ice{.driver = "ice",
                 .stats = {{"rx_priority_3_xoff.nic", 21},
                           {"rx_priority_3_xon.nic", 22},
                           {"tx_priority_3_xoff.nic", 23},
                           {"rx_dropped.nic", 24}}};
  fake().netdevs["ens1f0np0"] = bnxt;
  fake().netdevs["veth0"] = ice;
  auto s = collect();
  EXPECT_EQ(sample(*s, "rdma_netdev_pfc_pause_frames_total",
                   {{"device", "mlx5_0"}, {"priority", "3"}, {"direction", "tx"}}),
            12.0);
  // bnxt_en counts pause time in microseconds: 3,000,000 us and 1,000,000 us.
  EXPECT_DOUBLE_EQ(sample(*s, "rdma_netdev_pfc_pause_duration_seconds_total",
                          {{"device", "mlx5_0"}, {"priority", "3"}, {"direction", "rx"}}),
                   3.0);
  EXPECT_DOUBLE_EQ(sample(*s, "rdma_netdev_pfc_pause_duration_seconds_total",
                          {{"device", "mlx5_0"}, {"priority", "3"}, {"direction", "tx"}}),
                   1.0);
  EXPECT_EQ(sample(*s, "rdma_netdev_priority_bytes_total", {{"device", "mlx5_0"}}), 13.0);
  EXPECT_EQ(sample(*s, "rdma_netdev_discards_total", {{"device", "mlx5_0"}, {"reason", "rx_port"}}),
            15.0);
  EXPECT_EQ(sample(*s, "rdma_netdev_pfc_pause_frames_total",
                   {{"device", "rxe0"}, {"priority", "3"}, {"direction", "rx"}}),
            21.0);
  EXPECT_EQ(sample(*s, "rdma_netdev_discards_total", {{"device", "rxe0"}}), 24.0);
}

}  // namespace
}  // namespace rdma_exporter
