// Optional (dynamic) port counters: the STAT_GET_STATUS / STAT_SET codec fed
// kernel-shaped messages, the merge rule, and whole collections and
// maintenance against the fake kernel's mlx5 and rxe models.

#include <gtest/gtest.h>
#include <rdma/rdma_netlink.h>

#include <algorithm>
#include <cmath>

#include "collectors/optional_counters/manager.hpp"
#include "collectors/optional_counters/options.hpp"
#include "common/kernel/nldev/client.hpp"
#include "common/kernel/nldev/codec.hpp"
#include "common/kernel/nldev/optional_counter_codec.hpp"
#include "exporter/collection.hpp"
#include "exporter/privileges.hpp"
#include "tests/fake_kernel/fake_nldev.hpp"
#include "tests/fake_kernel/nl_message.hpp"
#include "tests/support/snapshot_query.hpp"

namespace rdma_exporter {
namespace {

using netlink::Bytes;
using netlink::Reply;
using nldev::HwCounterStatus;
using testing::ack_message;
using testing::attributes;
using testing::error_message;
using testing::FakeDevice;
using testing::FakeNldev;
using testing::FakePort;
using testing::nldev_type;
using testing::NlMessage;
using testing::sample;
using testing::series_count;

struct Entry {
  const char* name;
  std::optional<uint32_t> index;
  std::optional<uint8_t> dynamic;
};

// A STAT_GET_STATUS answer; the device and port numbers differ from each
// other and from the counter indices the tests use.
Bytes status_msg(std::initializer_list<Entry> entries, bool table = true) {
  NlMessage m(nldev_type(RDMA_NLDEV_CMD_STAT_GET_STATUS));
  m.u32(RDMA_NLDEV_ATTR_DEV_INDEX, 6).str(RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0");
  m.u32(RDMA_NLDEV_ATTR_PORT_INDEX, 2);
  if (table) {
    m.begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
    for (const auto& e : entries) {
      m.begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY);
      if (e.name != nullptr) m.str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, e.name);
      if (e.index) m.u32(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX, *e.index);
      if (e.dynamic) m.u8(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_DYNAMIC, *e.dynamic);
      m.end_nest();
    }
    m.end_nest();
  }
  return m.bytes();
}

Reply status_reply(const Bytes& m) {
  return Reply{{m, ack_message()}};
}

// ------------------------------------------------------------------ codec

TEST(OptionalCounterCodec, DecodesFixedAndOptionalCounters) {
  auto st = nldev::decode_counter_status(status_reply(status_msg({{"out_of_sequence", 10, {}},
                                                                  {"np_cnp_sent", 11, {}},
                                                                  {"cc_rx_ce_pkts", 12, 1},
                                                                  {"cc_tx_cnp_pkts", 13, 0}})));
  ASSERT_TRUE(st) << st.error().message;
  EXPECT_EQ(st->dev_index, 6U);
  EXPECT_EQ(st->port, 2U);
  ASSERT_EQ(st->counters.size(), 4U);
  const std::vector<std::string> names = {"out_of_sequence", "np_cnp_sent", "cc_rx_ce_pkts",
                                          "cc_tx_cnp_pkts"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(st->counters[i].name, names[i]);
    EXPECT_EQ(st->counters[i].index, 10U + i);
  }
  EXPECT_FALSE(st->counters[0].enabled.has_value());  // not optional
  EXPECT_FALSE(st->counters[1].enabled.has_value());
  EXPECT_EQ(st->counters[2].enabled, std::optional<bool>(true));
  EXPECT_EQ(st->counters[3].enabled, std::optional<bool>(false));
}

TEST(OptionalCounterCodec, MalformedAnswersAreErrorsNamingTheProblem) {
  struct Case {
    Bytes message;
    const char* says;
  };
  const Case cases[] = {
      {status_msg({}, false), "missing attribute STAT_HWCOUNTERS"},
      {status_msg({{nullptr, 0, {}}}), "STAT_HWCOUNTER_ENTRY_NAME"},
      {status_msg({{"cc_rx_ce_pkts", {}, 1}}), "STAT_HWCOUNTER_INDEX"},
      {status_msg({{"a", 3, {}}, {"b", 3, 1}}), "listed twice"},
  };
  for (const auto& c : cases) {
    auto st = nldev::decode_counter_status(status_reply(c.message));
    ASSERT_FALSE(st) << c.says;
    EXPECT_EQ(st.error().code, EBADMSG);
    EXPECT_NE(st.error().message.find(c.says), std::string::npos) << st.error().message;
  }
  // DYNAMIC as a u32 instead of a u8.
  NlMessage m(nldev_type(RDMA_NLDEV_CMD_STAT_GET_STATUS));
  m.u32(RDMA_NLDEV_ATTR_DEV_INDEX, 1).u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1);
  m.begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS)
      .begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)
      .str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, "cc_rx_ce_pkts")
      .u32(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX, 2)
      .u32(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_DYNAMIC, 1)
      .end_nest()
      .end_nest();
  auto bad = nldev::decode_counter_status(status_reply(m.bytes()));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("STAT_HWCOUNTER_DYNAMIC has a bad length"), std::string::npos);
  // Cut short inside the table, and no ACK at all.
  Bytes cut = status_msg({{"cc_rx_ce_pkts", 2, 1}});
  cut.resize(cut.size() - 6);
  reinterpret_cast<nlmsghdr*>(cut.data())->nlmsg_len = static_cast<uint32_t>(cut.size());
  EXPECT_FALSE(nldev::decode_counter_status(status_reply(cut)));
  EXPECT_FALSE(nldev::decode_counter_status(Reply{{status_msg({{"x", 0, {}}})}}));
}

TEST(OptionalCounterCodec, OldKernelsAnswerEinval) {
  const Bytes request = nldev::build_counter_status_get(1, 1);
  auto st = nldev::decode_counter_status(Reply{{error_message(-EINVAL, "", 0, request)}});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, EINVAL);
  EXPECT_NE(st.error().message.find("RDMA_NLDEV_CMD_STAT_GET_STATUS"), std::string::npos);
}

TEST(OptionalCounterCodec, SetRequestCarriesTheWholeSet) {
  const Bytes req = nldev::build_set_optional_counters(3, 2, {17, 19});
  const auto* nlh = reinterpret_cast<const nlmsghdr*>(req.data());
  EXPECT_EQ(nlh->nlmsg_type, nldev::message_type(RDMA_NLDEV_CMD_STAT_SET));
  EXPECT_EQ(nlh->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
  std::vector<uint32_t> indices;
  bool has_mode = false;
  for (const nlattr* a : attributes(nlh)) {
    if (mnl_attr_get_type(a) == RDMA_NLDEV_ATTR_STAT_MODE) has_mode = true;
    if (mnl_attr_get_type(a) != RDMA_NLDEV_ATTR_STAT_HWCOUNTERS) continue;
    const auto* e = static_cast<const nlattr*>(mnl_attr_get_payload(a));
    auto len = static_cast<int>(mnl_attr_get_payload_len(a));
    for (; mnl_attr_ok(e, len);
         len -= static_cast<int>(MNL_ALIGN(e->nla_len)), e = mnl_attr_next(e)) {
      EXPECT_EQ(mnl_attr_get_type(e), RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX);
      indices.push_back(mnl_attr_get_u32(e));
    }
  }
  EXPECT_FALSE(has_mode);
  EXPECT_EQ(indices, (std::vector<uint32_t>{17, 19}));
  // An empty set is an empty table (the kernel then disables every one).
  const Bytes none = nldev::build_set_optional_counters(3, 2, {});
  bool table = false;
  for (const nlattr* a : attributes(reinterpret_cast<const nlmsghdr*>(none.data()))) {
    if (mnl_attr_get_type(a) == RDMA_NLDEV_ATTR_STAT_HWCOUNTERS) {
      table = true;
      EXPECT_EQ(mnl_attr_get_payload_len(a), 0U);
    }
  }
  EXPECT_TRUE(table);
}

// ------------------------------------------------------------------ merge rule

std::vector<HwCounterStatus> mlx5_status(std::initializer_list<const char*> enabled) {
  std::vector<HwCounterStatus> out{{"out_of_sequence", 0, std::nullopt},
                                   {"np_cnp_sent", 1, std::nullopt}};
  uint32_t index = 2;
  for (const auto& c : testing::mlx5_optional_counters()) {
    const bool on = std::find_if(enabled.begin(), enabled.end(),
                                 [&](const char* n) { return c.name == n; }) != enabled.end();
    out.push_back({c.name, index++, on});
  }
  return out;
}

TEST(OptionalCounterPlan, AddsToWhatIsEnabledUnlessItOwnsTheSet) {
  const auto st = mlx5_status({"rdma_tx_bytes"});  // enabled by someone else (index 6)
  auto merged = plan_optional_counters(st, {"cc_rx_ce_pkts", "cc_tx_cnp_pkts"}, false);
  EXPECT_TRUE(merged.write);
  EXPECT_EQ(merged.indices, (std::vector<uint32_t>{2, 4, 6}));
  EXPECT_TRUE(merged.missing.empty());
  EXPECT_EQ(optional_counter_names(st, merged.indices),
            "cc_rx_ce_pkts,cc_tx_cnp_pkts,rdma_tx_bytes");

  auto owned = plan_optional_counters(st, {"cc_rx_ce_pkts", "cc_tx_cnp_pkts"}, true);
  EXPECT_TRUE(owned.write);
  EXPECT_EQ(owned.indices, (std::vector<uint32_t>{2, 4}));

  auto nothing = plan_optional_counters(st, {}, true);  // own, enable nothing: all off
  EXPECT_TRUE(nothing.write);
  EXPECT_TRUE(nothing.indices.empty());
  EXPECT_EQ(optional_counter_names(st, nothing.indices), "none");
}

TEST(OptionalCounterPlan, NoWriteWhenTheSetIsAlreadyRight) {
  const auto st = mlx5_status({"cc_rx_ce_pkts", "rdma_tx_bytes"});
  EXPECT_FALSE(plan_optional_counters(st, {"cc_rx_ce_pkts"}, false).write);
  EXPECT_TRUE(plan_optional_counters(st, {"cc_rx_ce_pkts"}, true).write);  // drops rdma_tx_bytes
  EXPECT_FALSE(plan_optional_counters(st, {"cc_rx_ce_pkts", "rdma_tx_bytes"}, true).write);
}

TEST(OptionalCounterPlan, NamesThePortDoesNotOfferAsOptionalAreMissing) {
  const auto st = mlx5_status({});
  // np_cnp_sent exists but is not optional; cc_foo does not exist.
  auto plan =
      plan_optional_counters(st, {"np_cnp_sent", "cc_foo", "cc_foo", "cc_rx_cnp_pkts"}, false);
  EXPECT_EQ(plan.missing, (std::vector<std::string>{"np_cnp_sent", "cc_foo"}));
  EXPECT_EQ(plan.indices, (std::vector<uint32_t>{3}));
  // rxe: no optional counter at all.
  std::vector<HwCounterStatus> rxe{{"sent_pkts", 0, std::nullopt}, {"rcvd_pkts", 1, std::nullopt}};
  auto none = plan_optional_counters(rxe, {"cc_rx_ce_pkts"}, false);
  EXPECT_FALSE(none.write);
  EXPECT_EQ(none.missing, (std::vector<std::string>{"cc_rx_ce_pkts"}));
}

// ------------------------------------------------------------------ fake kernel, collections

class OptionalCountersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeDevice mlx{.index = 1, .name = "mlx5_0"};
    mlx.ports.push_back(FakePort{.index = 1,
                                 .counters = {{"out_of_sequence", 5}, {"np_cnp_sent", 7}},
                                 .optional_counters = testing::mlx5_optional_counters()});
    FakeDevice rxe{.index = 2, .name = "rxe0"};
    rxe.ports.push_back(FakePort{.index = 1, .counters = {{"sent_pkts", 10}, {"rcvd_pkts", 11}}});
    kernel_->devices = {mlx, rxe};
    config_.sysfs.root = "/nonexistent";
    config_.collectors.set_enabled("sysfs", false);
    config_.collectors.set_enabled("ethtool", false);
    config_.collectors.set_enabled("dcb", false);
  }

  Collection& collection() {
    if (!collection_) {
      auto k = std::make_unique<FakeNldev>(std::move(*kernel_));
      kernel_ptr_ = k.get();
      collection_ = std::make_unique<Collection>(config_, std::move(k));
    }
    return *collection_;
  }
  FakeNldev& kernel() { return kernel_ptr_ != nullptr ? *kernel_ptr_ : *kernel_; }
  testing::FakeOptionalCounter& mlx_counter(const std::string& name) {
    auto& list = kernel().device(1)->ports[0].optional_counters;
    return *std::find_if(list.begin(), list.end(), [&](const auto& c) { return c.name == name; });
  }
  std::size_t status_sets() const {
    const FakeNldev& k = kernel_ptr_ != nullptr ? *kernel_ptr_ : *kernel_;
    return static_cast<std::size_t>(
        std::count_if(k.requests.begin(), k.requests.end(),
                      [](const auto& r) { return r.cmd == RDMA_NLDEV_CMD_STAT_SET; }));
  }

  Config config_;
  std::unique_ptr<FakeNldev> kernel_ = std::make_unique<FakeNldev>();
  FakeNldev* kernel_ptr_ = nullptr;
  std::unique_ptr<Collection> collection_;
};

TEST_F(OptionalCountersTest, EnabledGaugePerOfferedCounterAndValuesAsHwCounters) {
  mlx_counter("cc_rx_ce_pkts").enabled = true;
  mlx_counter("cc_rx_ce_pkts").value = 1234;
  auto s = collection().collect();
  EXPECT_TRUE(s->all_succeeded());
  EXPECT_EQ(series_count(*s, "rdma_port_optional_stat_enabled"), 7U);
  EXPECT_EQ(sample(*s, "rdma_port_optional_stat_enabled",
                   {{"device", "mlx5_0"}, {"port", "1"}, {"counter", "cc_rx_ce_pkts"}}),
            1.0);
  EXPECT_EQ(sample(*s, "rdma_port_optional_stat_enabled",
                   {{"device", "mlx5_0"}, {"counter", "cc_tx_cnp_pkts"}}),
            0.0);
  // The enabled one's value comes with the port's other hw counters; the
  // disabled ones are not reported by the kernel at all.
  EXPECT_EQ(sample(*s, "rdma_port_hw_cc_rx_ce_pkts_total", {{"device", "mlx5_0"}}), 1234.0);
  EXPECT_FALSE(testing::has_family(*s, "rdma_port_hw_cc_tx_cnp_pkts_total"));
  // rxe offers none: no series, no error.
  EXPECT_TRUE(std::isnan(sample(*s, "rdma_port_optional_stat_enabled", {{"device", "rxe0"}})));
  EXPECT_FALSE(testing::has_family(*s, "rdma_port_optional_stat_writes_total"));
  EXPECT_EQ(status_sets(), 0U);  // observing never writes
}

TEST_F(OptionalCountersTest, OldKernelOrPortWithoutCountersIsNotAFailure) {
  kernel_->devices[0].ports[0].status_error = EINVAL;  // before Linux 5.16
  kernel_->devices[1].ports[0].status_error = EOPNOTSUPP;
  auto s = collection().collect();
  EXPECT_TRUE(s->all_succeeded());
  EXPECT_FALSE(testing::has_family(*s, "rdma_port_optional_stat_enabled"));
}

TEST_F(OptionalCountersTest, OtherErrorsFailTheCollectorAndNameThePort) {
  kernel_->devices[0].ports[0].status_error = EPERM;
  auto s = collection().collect();
  const auto& o = *std::find_if(s->outcomes.begin(), s->outcomes.end(),
                                [](const auto& x) { return x.name == "optional_counters"; });
  ASSERT_EQ(o.errors.size(), 1U);
  EXPECT_NE(o.errors[0].find("mlx5_0 port 1"), std::string::npos);
  EXPECT_EQ(sample(*s, "rdma_exporter_collector_success", {{"collector", "optional_counters"}}),
            0.0);
}

TEST_F(OptionalCountersTest, ConfiguredCountersAreEnabledMergedAndReappliedAfterAReload) {
  mlx_counter("rdma_tx_bytes").enabled = true;  // an operator's
  config_.collectors.options<OptionalCountersOptions>().ports = {
      {.device = "mlx5_.*", .enable = {"cc_rx_ce_pkts", "cc_rx_cnp_pkts", "cc_tx_cnp_pkts"}},
      {.device = "rxe.*", .enable = {"cc_rx_ce_pkts"}}};
  EXPECT_TRUE(collection().manages_kernel_state());
  EXPECT_EQ(collection().maintenance_interval(), std::chrono::seconds(10));
  collection().maintain();
  for (const char* name : {"cc_rx_ce_pkts", "cc_rx_cnp_pkts", "cc_tx_cnp_pkts", "rdma_tx_bytes"}) {
    EXPECT_TRUE(mlx_counter(name).enabled) << name;
  }
  EXPECT_FALSE(mlx_counter("rdma_rx_bytes").enabled);
  EXPECT_EQ(status_sets(), 1U);  // rxe offers nothing to enable: no write
  collection().maintain();
  EXPECT_EQ(status_sets(), 1U);  // already right: no write

  // A driver reload: the device comes back under a new index, all disabled.
  FakeDevice reloaded = *kernel().device(1);
  reloaded.index = 7;
  for (auto& c : reloaded.ports[0].optional_counters) c.enabled = false;
  kernel().devices[0] = reloaded;
  collection().maintain();
  EXPECT_EQ(status_sets(), 2U);
  auto& list = kernel().device(7)->ports[0].optional_counters;
  EXPECT_EQ(std::count_if(list.begin(), list.end(), [](const auto& c) { return c.enabled; }), 3);

  auto s = collection().collect();
  EXPECT_EQ(sample(*s, "rdma_port_optional_stat_writes_total",
                   {{"device", "mlx5_0"}, {"port", "1"}, {"result", "ok"}}),
            2.0);
  EXPECT_EQ(sample(*s, "rdma_port_optional_stat_enabled",
                   {{"device", "mlx5_0"}, {"counter", "cc_tx_cnp_pkts"}}),
            1.0);
}

TEST_F(OptionalCountersTest, OwningTheSetDisablesOthers) {
  mlx_counter("rdma_tx_bytes").enabled = true;
  config_.collectors.options<OptionalCountersOptions>().ports = {
      {.device = "mlx5_0", .port = 1, .enable = {"cc_rx_ce_pkts"}, .own = true}};
  collection().maintain();
  EXPECT_TRUE(mlx_counter("cc_rx_ce_pkts").enabled);
  EXPECT_FALSE(mlx_counter("rdma_tx_bytes").enabled);
}

TEST_F(OptionalCountersTest, WithoutCapNetAdminWritesFailVisibly) {
  kernel_->privileged = false;
  config_.collectors.options<OptionalCountersOptions>().ports = {{.enable = {"cc_rx_ce_pkts"}}};
  EXPECT_EQ(privilege_problems(config_, {.cap_net_admin = false}).size(), 1U);
  EXPECT_TRUE(privilege_problems(config_, {.cap_net_admin = true}).empty());
  collection().maintain();
  collection().maintain();
  EXPECT_FALSE(mlx_counter("cc_rx_ce_pkts").enabled);
  auto s = collection().collect();
  EXPECT_EQ(sample(*s, "rdma_port_optional_stat_writes_total",
                   {{"device", "mlx5_0"}, {"result", "EPERM"}}),
            2.0);
  EXPECT_TRUE(s->all_succeeded());  // reading still works
}

TEST_F(OptionalCountersTest, ObserveOnlyRulesAndADisabledCollectorNeverWrite) {
  config_.collectors.options<OptionalCountersOptions>().ports = {
      {.device = "mlx5_0"}};  // nothing to enable
  EXPECT_FALSE(collection().manages_kernel_state());
  EXPECT_EQ(collection().maintenance_interval(), Duration::zero());
  Config off = config_;
  off.collectors.set_enabled("optional_counters", false);
  off.collectors.options<OptionalCountersOptions>().ports = {{.enable = {"cc_rx_ce_pkts"}}};
  collection().reconfigure(off);
  EXPECT_FALSE(collection().manages_kernel_state());
  collection().maintain();
  EXPECT_EQ(status_sets(), 0U);
}

// The fake kernel's STAT_SET rules, through the client.
TEST_F(OptionalCountersTest, FakeKernelRejectsIndicesThatAreNotOptional) {
  nldev::Client client(kernel());
  auto bad = client.set_optional_counters(1, 1, {0});  // out_of_sequence is fixed
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, EINVAL);
  auto past = client.set_optional_counters(1, 1, {99});
  EXPECT_EQ(past.error().code, EINVAL);
  EXPECT_EQ(client.set_optional_counters(2, 1, {0}).error().code, EINVAL);  // rxe
  EXPECT_TRUE(client.set_optional_counters(2, 1, {}));                      // nothing: fine
  EXPECT_TRUE(client.set_optional_counters(1, 1, {2, 8}));
  auto st = client.counter_status(1, 1);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->counters[2].name, "cc_rx_ce_pkts");
  EXPECT_EQ(st->counters[2].enabled, std::optional<bool>(true));
  EXPECT_EQ(st->counters[8].name, "rdma_rx_bytes");
  EXPECT_EQ(st->counters[8].enabled, std::optional<bool>(true));
  auto rxe = client.counter_status(2, 1);
  ASSERT_TRUE(rxe);
  EXPECT_EQ(rxe->counters.size(), 2U);
  EXPECT_FALSE(rxe->counters[0].enabled.has_value());
}

}  // namespace
}  // namespace rdma_exporter
