// DCB (QoS configuration) over rtnetlink: the codec fed the messages
// dcbnl_ieee_fill() builds, malformed and truncated ones, and whole
// collections against a fake DCB interface.

#include <gtest/gtest.h>
#include <linux/dcbnl.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "collectors/dcb/options.hpp"
#include "common/kernel/rtnetlink/dcb_codec.hpp"
#include "exporter/collection.hpp"
#include "tests/fake_kernel/fake_dcb.hpp"
#include "tests/fake_kernel/fake_ethtool.hpp"
#include "tests/fake_kernel/fake_nldev.hpp"
#include "tests/fake_kernel/nl_message.hpp"
#include "tests/support/collector_run.hpp"
#include "tests/support/snapshot_query.hpp"

namespace rdma_exporter {
namespace {

using dcb::Reply;
using testing::ack_message;
using testing::dcb_ieee_message;
using testing::FakeDcbNetdev;
using testing::NlMessage;
using testing::sample;
using testing::series_count;

Reply answer(const testing::Bytes& m) {
  return Reply{{m, ack_message()}};
}

// A message like dcbnl_ieee_fill()'s, with parts left out or changed.
testing::Bytes message(const std::function<void(NlMessage&)>& ieee_body,
                       uint8_t cmd = DCB_CMD_IEEE_GET, bool ifname = true) {
  dcbmsg header{};
  header.dcb_family = AF_UNSPEC;
  header.cmd = cmd;
  NlMessage m(RTM_GETDCB);
  m.family_header(&header, sizeof header);
  if (ifname) m.str(DCB_ATTR_IFNAME, "ens1f0np0");
  m.begin_nest(DCB_ATTR_IEEE);
  ieee_body(m);
  m.end_nest();
  return m.bytes();
}

TEST(DcbCodec, RequestIsAnIeeeGetForTheName) {
  const testing::Bytes req = dcb::build_ieee_get("ens1f0np0");
  const auto* nlh = reinterpret_cast<const nlmsghdr*>(req.data());
  EXPECT_EQ(nlh->nlmsg_type, RTM_GETDCB);
  EXPECT_EQ(nlh->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
  dcbmsg header{};
  std::memcpy(&header, mnl_nlmsg_get_payload(nlh), sizeof header);
  EXPECT_EQ(header.dcb_family, AF_UNSPEC);
  EXPECT_EQ(header.cmd, DCB_CMD_IEEE_GET);
  const auto* a = static_cast<const nlattr*>(mnl_nlmsg_get_payload_offset(nlh, sizeof header));
  EXPECT_EQ(mnl_attr_get_type(a), DCB_ATTR_IFNAME);
  EXPECT_STREQ(mnl_attr_get_str(a), "ens1f0np0");
}

TEST(DcbCodec, DecodesPfcEtsAppTableAndDcbx) {
  const FakeDcbNetdev n = testing::mlx5_dcb();
  auto c = dcb::decode_ieee(answer(dcb_ieee_message("ens1f0np0", n, NLM_F_REQUEST | NLM_F_ACK)));
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->ifname, "ens1f0np0");
  ASSERT_TRUE(c->pfc);
  EXPECT_EQ(c->pfc->pfc_en, 1U << 3);
  EXPECT_EQ(c->pfc->pfc_cap, 8);
  ASSERT_TRUE(c->ets);
  EXPECT_EQ(c->ets->ets_cap, 8);
  EXPECT_EQ(c->ets->prio_tc[3], 3);
  EXPECT_EQ(c->ets->prio_tc[6], 6);
  EXPECT_EQ(c->ets->tc_tx_bw[0], 50);
  EXPECT_EQ(c->ets->tc_tsa[6], IEEE_8021QAZ_TSA_STRICT);
  ASSERT_EQ(c->apps.size(), 64U);
  EXPECT_EQ(c->apps[26].selector, IEEE_8021QAZ_APP_SEL_DSCP);
  EXPECT_EQ(c->apps[26].protocol, 26);
  EXPECT_EQ(c->apps[26].priority, 3);
  EXPECT_EQ(c->dcbx, DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE);
}

TEST(DcbCodec, PartsADriverDoesNotGiveAreAbsentUnknownOnesIgnored) {
  ieee_pfc pfc{};
  pfc.pfc_en = 0x88;
  auto c = dcb::decode_ieee(answer(message([&](NlMessage& m) {
    m.raw(DCB_ATTR_IEEE_PFC, &pfc, sizeof pfc);
    m.u32(DCB_ATTR_IEEE_MAXRATE, 7);  // known to the kernel, not read here
    m.raw(200, "future", 6);          // a newer kernel's attribute
    m.begin_nest(DCB_ATTR_IEEE_APP_TABLE).u8(250, 1).end_nest();  // not an APP entry
  })));
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_FALSE(c->ets);
  EXPECT_EQ(c->pfc->pfc_en, 0x88);
  EXPECT_TRUE(c->apps.empty());
  EXPECT_FALSE(c->dcbx);
}

// struct ieee_pfc: requests[] counts PFC frames sent per priority,
// indications[] those received.
TEST(DcbCodec, PfcFrameCountsPerPriorityKeepTheirDirection) {
  ieee_pfc pfc{};
  pfc.pfc_cap = 8;
  pfc.pfc_en = 1U << 3;
  pfc.mbc = 1;
  pfc.delay = 32;
  pfc.requests[3] = 11;
  pfc.indications[3] = 22;
  pfc.indications[7] = 5;
  auto c = dcb::decode_ieee(
      answer(message([&](NlMessage& m) { m.raw(DCB_ATTR_IEEE_PFC, &pfc, sizeof pfc); })));
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_TRUE(c->pfc);
  EXPECT_EQ(c->pfc->mbc, 1);
  EXPECT_EQ(c->pfc->delay, 32);
  EXPECT_EQ(c->pfc->requests[3], 11U);
  EXPECT_EQ(c->pfc->indications[3], 22U);
  EXPECT_EQ(c->pfc->requests[7], 0U);
  EXPECT_EQ(c->pfc->indications[7], 5U);
}

// Every byte of struct ieee_ets, every field of ieee_pfc and of each
// dcb_app with a value no other has: a field copied from its neighbour in
// the kernel's struct comes out wrong.
TEST(DcbCodec, EveryStructFieldComesFromItsOwnPlace) {
  ieee_ets ets{};
  auto* ets_bytes = reinterpret_cast<uint8_t*>(&ets);
  for (std::size_t i = 0; i < sizeof ets; ++i) ets_bytes[i] = static_cast<uint8_t>(0x40 + i);
  ieee_pfc pfc{};
  pfc.pfc_cap = 0x11;
  pfc.pfc_en = 0x22;
  pfc.mbc = 0x33;
  pfc.delay = 0x4455;
  for (std::size_t i = 0; i < dcb::kMaxTcs; ++i) {
    pfc.requests[i] = 0x1000 + i;
    pfc.indications[i] = 0x2000 + i;
  }
  const std::vector<dcb_app> apps = {{IEEE_8021QAZ_APP_SEL_DSCP, 6, 46},
                                     {IEEE_8021QAZ_APP_SEL_ETHERTYPE, 3, 0x8915}};
  auto c = dcb::decode_ieee(answer(message([&](NlMessage& m) {
    m.raw(DCB_ATTR_IEEE_ETS, &ets, sizeof ets);
    m.raw(DCB_ATTR_IEEE_PFC, &pfc, sizeof pfc);
    m.begin_nest(DCB_ATTR_IEEE_APP_TABLE);
    for (const dcb_app& app : apps) m.raw(DCB_ATTR_IEEE_APP, &app, sizeof app);
    m.end_nest();
  })));
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_TRUE(c->ets);
  EXPECT_EQ(c->ets->willing, ets.willing);
  EXPECT_EQ(c->ets->ets_cap, ets.ets_cap);
  EXPECT_EQ(c->ets->cbs, ets.cbs);
  for (std::size_t tc = 0; tc < dcb::kMaxTcs; ++tc) {
    EXPECT_EQ(c->ets->tc_tx_bw[tc], ets.tc_tx_bw[tc]) << tc;
    EXPECT_EQ(c->ets->tc_rx_bw[tc], ets.tc_rx_bw[tc]) << tc;
    EXPECT_EQ(c->ets->tc_tsa[tc], ets.tc_tsa[tc]) << tc;
    EXPECT_EQ(c->ets->prio_tc[tc], ets.prio_tc[tc]) << tc;
  }
  ASSERT_TRUE(c->pfc);
  EXPECT_EQ(c->pfc->pfc_cap, 0x11);
  EXPECT_EQ(c->pfc->pfc_en, 0x22);
  EXPECT_EQ(c->pfc->mbc, 0x33);
  EXPECT_EQ(c->pfc->delay, 0x4455);
  for (std::size_t p = 0; p < dcb::kMaxTcs; ++p) {
    EXPECT_EQ(c->pfc->requests[p], 0x1000 + p) << p;
    EXPECT_EQ(c->pfc->indications[p], 0x2000 + p) << p;
  }
  ASSERT_EQ(c->apps.size(), apps.size());
  for (std::size_t i = 0; i < apps.size(); ++i) {
    EXPECT_EQ(c->apps[i].selector, apps[i].selector) << i;
    EXPECT_EQ(c->apps[i].priority, apps[i].priority) << i;
    EXPECT_EQ(c->apps[i].protocol, apps[i].protocol) << i;
  }
}

TEST(DcbCodec, MalformedAndTruncatedMessagesAreErrors) {
  ieee_ets ets{};
  struct Case {
    testing::Bytes bytes;
    const char* says;
  };
  const std::vector<Case> cases = {
      {message([&](NlMessage& m) { m.raw(DCB_ATTR_IEEE_ETS, &ets, sizeof ets - 1); }),
       "DCB_ATTR_IEEE_ETS has 58 bytes"},
      {message([&](NlMessage& m) { m.raw(DCB_ATTR_IEEE_PFC, &ets, 8); }), "DCB_ATTR_IEEE_PFC"},
      {message([&](NlMessage& m) {
         m.begin_nest(DCB_ATTR_IEEE_APP_TABLE).raw(DCB_ATTR_IEEE_APP, "ab", 2).end_nest();
       }),
       "DCB_ATTR_IEEE_APP"},
      {message([](NlMessage&) {}, DCB_CMD_CEE_GET), "answer for command"},
      {message([](NlMessage&) {}, DCB_CMD_IEEE_GET, false), "DCB_ATTR_IFNAME"},
  };
  for (const auto& c : cases) {
    auto r = dcb::decode_ieee(answer(c.bytes));
    ASSERT_FALSE(r) << c.says;
    EXPECT_EQ(r.error().code, EBADMSG);
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << r.error().message;
  }
  // No DCB_ATTR_IEEE nest at all.
  dcbmsg header{AF_UNSPEC, DCB_CMD_IEEE_GET, 0};
  NlMessage bare(RTM_GETDCB);
  bare.family_header(&header, sizeof header).str(DCB_ATTR_IFNAME, "x");
  EXPECT_FALSE(dcb::decode_ieee(answer(bare.bytes())));
  // The dcbmsg header cut off.
  NlMessage headless(RTM_GETDCB);
  headless.family_header(&header, 2);
  EXPECT_FALSE(dcb::decode_ieee(answer(headless.bytes())));
  // Truncated in the middle of the IEEE nest, or no ACK after it.
  testing::Bytes cut = dcb_ieee_message("ens1f0np0", testing::mlx5_dcb());
  cut.resize(cut.size() / 2);
  reinterpret_cast<nlmsghdr*>(cut.data())->nlmsg_len = static_cast<uint32_t>(cut.size());
  EXPECT_FALSE(dcb::decode_ieee(answer(cut)));
  EXPECT_FALSE(dcb::decode_ieee(Reply{{dcb_ieee_message("e", testing::mlx5_dcb())}}));
  // Two answers to one request.
  const auto one = dcb_ieee_message("e", testing::mlx5_dcb());
  EXPECT_FALSE(dcb::decode_ieee(Reply{{one, one, ack_message()}}));
}

TEST(DcbCodec, NoDcbIsEopnotsupp) {
  testing::FakeDcb k;
  k.netdevs["veth0"] = FakeDcbNetdev{.dcb = false};
  auto reply = k.exchange(dcb::build_ieee_get("veth0"));
  ASSERT_TRUE(reply);
  auto c = dcb::decode_ieee(*reply);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, EOPNOTSUPP);
  EXPECT_NE(c.error().message.find("RTM_GETDCB"), std::string::npos);
  auto gone = dcb::decode_ieee(k.exchange(dcb::build_ieee_get("nosuch")).value());
  EXPECT_EQ(gone.error().code, ENODEV);
}

class DcbCollectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::FakeDevice mlx{.index = 1, .name = "mlx5_0"};
    mlx.ports.push_back(testing::FakePort{.index = 1, .netdev = "ens1f0np0", .netdev_index = 4});
    mlx.ports.push_back(testing::FakePort{.index = 2, .netdev = "ens1f0np0", .netdev_index = 4});
    testing::FakeDevice rxe{.index = 2, .name = "rxe0"};
    rxe.ports.push_back(testing::FakePort{.index = 1, .netdev = "veth0", .netdev_index = 5});
    nldev_->devices = {mlx, rxe};
    dcb_->netdevs["ens1f0np0"] = testing::mlx5_dcb();
    dcb_->netdevs["veth0"] = FakeDcbNetdev{.dcb = false};
  }

  // The dcb collector alone, as its registry entry makes it.
  std::shared_ptr<const Snapshot> collect() {
    if (!run_) {
      dcb_ptr_ = dcb_.get();
      run_ = std::make_unique<testing::CollectorRun>(
          "dcb",
          KernelInterfaces{std::move(nldev_), std::move(dcb_),
                           std::make_unique<testing::FakeEthtool>()},
          settings_);
    }
    return run_->collect();
  }
  testing::FakeDcb& fake() { return dcb_ptr_ != nullptr ? *dcb_ptr_ : *dcb_; }

  CollectorSettings settings_;
  std::unique_ptr<testing::FakeNldev> nldev_ = std::make_unique<testing::FakeNldev>();
  std::unique_ptr<testing::FakeDcb> dcb_ = std::make_unique<testing::FakeDcb>();
  testing::FakeDcb* dcb_ptr_ = nullptr;
  std::unique_ptr<testing::CollectorRun> run_;
};

TEST_F(DcbCollectionTest, QosConfigurationPerPortAndNothingForVeth) {
  auto s = collect();
  EXPECT_TRUE(s->all_succeeded());
  const Labels p1{{"device", "mlx5_0"}, {"port", "1"}, {"netdev", "ens1f0np0"}};
  auto with = [&](const char* k, const char* v) {
    Labels l = p1;
    l.emplace_back(k, v);
    return l;
  };
  EXPECT_EQ(sample(*s, "rdma_netdev_pfc_enabled", with("priority", "3")), 1.0);
  EXPECT_EQ(sample(*s, "rdma_netdev_pfc_enabled", with("priority", "4")), 0.0);
  EXPECT_EQ(sample(*s, "rdma_netdev_priority_traffic_class", with("priority", "6")), 6.0);
  EXPECT_EQ(sample(*s, "rdma_netdev_priority_traffic_class", with("priority", "5")), 0.0);
  EXPECT_EQ(sample(*s, "rdma_netdev_ets_bandwidth_percent", with("traffic_class", "3")), 50.0);
  Labels strict = with("traffic_class", "6");
  strict.emplace_back("tsa", "strict");
  EXPECT_EQ(sample(*s, "rdma_netdev_ets_tsa_info", strict), 1.0);
  EXPECT_EQ(sample(*s, "rdma_netdev_qos_trust_info", with("trust", "dscp")), 1.0);
  EXPECT_EQ(sample(*s, "rdma_netdev_dcbx_info", with("mode", "host,ieee")), 1.0);
  EXPECT_FALSE(testing::has_family(*s, "rdma_netdev_dscp_priority"));  // off by default
  // Both ports of the device show their netdev's configuration, read once.
  EXPECT_EQ(series_count(*s, "rdma_netdev_pfc_enabled"), 16U);
  EXPECT_EQ(std::count(fake().asked.begin(), fake().asked.end(), "ens1f0np0"), 1);
  // veth has no DCB: no series and no error.
  EXPECT_TRUE(std::isnan(sample(*s, "rdma_netdev_qos_trust_info", {{"netdev", "veth0"}})));
}

TEST_F(DcbCollectionTest, DscpMapOnRequestAndPcpTrustWithoutDscpEntries) {
  settings_.options<DcbOptions>().dscp_priority = true;
  FakeDcbNetdev pcp = testing::mlx5_dcb();
  pcp.apps = {{IEEE_8021QAZ_APP_SEL_ETHERTYPE, 3, 0x8915}};  // RoCEv1 ethertype only
  pcp.ets->ets_cap = 4;
  dcb_->netdevs["veth0"] = pcp;
  auto s = collect();
  EXPECT_EQ(series_count(*s, "rdma_netdev_dscp_priority"), 2U * 64);  // two ports
  EXPECT_EQ(sample(*s, "rdma_netdev_dscp_priority",
                   {{"netdev", "ens1f0np0"}, {"port", "1"}, {"dscp", "46"}}),
            5.0);
  EXPECT_EQ(sample(*s, "rdma_netdev_qos_trust_info", {{"netdev", "veth0"}, {"trust", "pcp"}}), 1.0);
  // Only the traffic classes the port has.
  EXPECT_EQ(series_count(*s, "rdma_netdev_ets_bandwidth_percent"), 8U * 2 + 4U);
}

TEST_F(DcbCollectionTest, ANetdevWithOneTrafficClassHasOneEtsSeries) {
  FakeDcbNetdev one = testing::mlx5_dcb();
  one.ets->ets_cap = 1;
  one.ets->tc_tx_bw[0] = 100;
  dcb_->netdevs["veth0"] = one;
  auto s = collect();
  EXPECT_EQ(series_count(*s, "rdma_netdev_ets_bandwidth_percent"), 8U * 2 + 1U);
  EXPECT_EQ(sample(*s, "rdma_netdev_ets_bandwidth_percent",
                   {{"netdev", "veth0"}, {"traffic_class", "0"}}),
            100.0);
  EXPECT_TRUE(std::isnan(sample(*s, "rdma_netdev_ets_bandwidth_percent",
                                {{"netdev", "veth0"}, {"traffic_class", "1"}})));
}

TEST_F(DcbCollectionTest, TheFirstAppEntryOfADscpValueGivesItsPriority) {
  settings_.options<DcbOptions>().dscp_priority = true;
  FakeDcbNetdev twice = testing::mlx5_dcb();
  twice.apps = {{IEEE_8021QAZ_APP_SEL_DSCP, 5, 46}, {IEEE_8021QAZ_APP_SEL_DSCP, 2, 46}};
  dcb_->netdevs["veth0"] = twice;
  auto s = collect();
  EXPECT_EQ(sample(*s, "rdma_netdev_dscp_priority", {{"netdev", "veth0"}, {"dscp", "46"}}), 5.0);
}

TEST_F(DcbCollectionTest, ErrorsOtherThanNoDcbNameTheNetdev) {
  dcb_->netdevs.erase("veth0");  // ENODEV: not in this namespace, quiet
  auto s = collect();
  EXPECT_TRUE(s->all_succeeded());
  fake().netdevs["ens1f0np0"].ets.reset();
  fake().netdevs["ens1f0np0"].pfc.reset();
  s = run_->collect();
  EXPECT_TRUE(s->all_succeeded());
  EXPECT_FALSE(testing::has_family(*s, "rdma_netdev_pfc_enabled"));
  EXPECT_TRUE(testing::has_family(*s, "rdma_netdev_qos_trust_info"));
}

}  // namespace
}  // namespace rdma_exporter
