// The fake kernel's per-QP counter rules, through the nldev client: what the
// exporter's qp counter code will meet on a real mlx5 (or rxe) port.

#include "tests/fake_kernel/fake_nldev.hpp"

#include <gtest/gtest.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_netlink.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "common/kernel/nldev/client.hpp"
#include "common/kernel/nldev/codec.hpp"
#include "common/kernel/nldev/counter_codec.hpp"
#include "tests/fake_kernel/nl_message.hpp"

namespace rdma_exporter {
namespace {

using nldev::CounterSet;
using testing::FakeDevice;
using testing::FakeNldev;
using testing::FakePort;

constexpr uint8_t kRc = IB_UVERBS_QPT_RC;
constexpr uint8_t kUd = IB_UVERBS_QPT_UD;
constexpr uint32_t kMlx = 1;  // mlx5_0: two ports, per-QP counters
constexpr uint32_t kRxe = 2;  // rxe0: one port, none
constexpr uint32_t kNone = RDMA_COUNTER_MODE_NONE;
constexpr uint32_t kAuto = RDMA_COUNTER_MODE_AUTO;
constexpr uint32_t kManual = RDMA_COUNTER_MODE_MANUAL;

class FakeKernelTest : public ::testing::Test {
 protected:
  FakeKernelTest() {
    FakeDevice mlx{.index = kMlx, .name = "mlx5_0"};
    mlx.ports.push_back(FakePort{.index = 1, .counters = {{"out_of_sequence", 1000}}});
    mlx.ports.push_back(FakePort{.index = 2});
    kernel.devices.push_back(mlx);
    FakeDevice rxe{.index = kRxe, .name = "rxe0", .protocol = "roce"};
    rxe.ports.push_back(FakePort{.index = 1});
    rxe.qp_counters_supported = false;
    kernel.devices.push_back(rxe);
  }

  nldev::CounterMode mode(uint32_t dev, uint32_t port) {
    auto m = client.counter_mode(dev, port);
    EXPECT_TRUE(m) << m.error().message;
    return m ? *m : nldev::CounterMode{.mode = 0xdead, .auto_mask = 0xdead};
  }

  std::vector<CounterSet> sets(uint32_t dev = kMlx) {
    auto s = client.counter_sets(dev);
    EXPECT_TRUE(s) << s.error().message;
    return s ? *s : std::vector<CounterSet>{};
  }

  // The set a QP is listed in, if any.
  std::optional<CounterSet> set_of(uint32_t lqpn, uint32_t dev = kMlx) {
    for (const auto& s : sets(dev)) {
      if (std::find(s.lqpns.begin(), s.lqpns.end(), lqpn) != s.lqpns.end()) return s;
    }
    return std::nullopt;
  }

  uint64_t port_total(const std::string& name, uint32_t port = 1) {
    auto c = client.port_counters(kMlx, port);
    EXPECT_TRUE(c) << c.error().message;
    if (!c) return 0;
    for (const auto& hc : c->counters) {
      if (hc.name == name) return hc.value;
    }
    ADD_FAILURE() << "no port counter " << name;
    return 0;
  }

  uint64_t set_value(const CounterSet& s, const std::string& name) {
    for (const auto& hc : s.counters) {
      if (hc.name == name) return hc.value;
    }
    ADD_FAILURE() << "no counter " << name << " in set " << s.id;
    return 0;
  }

  FakeNldev kernel;
  nldev::Client client{kernel};
};

TEST_F(FakeKernelTest, AutoModeIsSetAndReadBackPerPort) {
  EXPECT_EQ(mode(kMlx, 1).mode, kNone);
  for (uint32_t mask : {1U, 2U, 3U}) {
    ASSERT_TRUE(client.set_auto_mode(kMlx, 1, mask));
    const auto m = mode(kMlx, 1);
    EXPECT_EQ(m.mode, kAuto);
    EXPECT_EQ(m.auto_mask, mask);
    EXPECT_EQ(mode(kMlx, 2).mode, kNone);  // the other port is left alone
  }
  ASSERT_TRUE(client.set_auto_mode(kMlx, 1, 0));
  EXPECT_EQ(mode(kMlx, 1).mode, kNone);
  EXPECT_EQ(mode(kMlx, 1).auto_mask, 0U);

  auto bad_port = client.counter_mode(kMlx, 3);
  ASSERT_FALSE(bad_port);
  EXPECT_EQ(bad_port.error().code, EINVAL);
  Status bad_mask = client.set_auto_mode(kMlx, 1, 4);
  ASSERT_FALSE(bad_mask);
  EXPECT_EQ(bad_mask.error().code, EINVAL);
}

TEST_F(FakeKernelTest, SwitchingAutoOnWhileASetIsBoundIsBusy) {
  const uint32_t qp = kernel.create_qp(kMlx, 1, kRc, 500);
  auto bound = client.bind_qp(kMlx, 1, qp);
  ASSERT_TRUE(bound) << bound.error().message;
  EXPECT_EQ(mode(kMlx, 1).mode, kManual);

  Status busy = client.set_auto_mode(kMlx, 1, RDMA_COUNTER_MASK_QP_TYPE);
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().code, EBUSY);
  EXPECT_NE(busy.error().message.find("not allowed when there is a bound QP"), std::string::npos)
      << busy.error().message;
  EXPECT_EQ(mode(kMlx, 1).mode, kManual);
  // Port 2 has no set: auto mode goes on there.
  EXPECT_TRUE(client.set_auto_mode(kMlx, 2, RDMA_COUNTER_MASK_QP_TYPE));

  // Once the set is gone the port may switch.
  kernel.destroy_qp(kMlx, qp);
  EXPECT_EQ(mode(kMlx, 1).mode, kNone);
  EXPECT_TRUE(client.set_auto_mode(kMlx, 1, RDMA_COUNTER_MASK_QP_TYPE));
}

TEST_F(FakeKernelTest, ChangingAutoCriteriaWithSetsIsBusyAndOffLeavesManual) {
  ASSERT_TRUE(client.set_auto_mode(kMlx, 1, RDMA_COUNTER_MASK_QP_TYPE));
  const uint32_t qp = kernel.create_qp(kMlx, 1, kRc, 500);
  ASSERT_TRUE(set_of(qp));

  Status change = client.set_auto_mode(kMlx, 1, RDMA_COUNTER_MASK_QP_TYPE | RDMA_COUNTER_MASK_PID);
  ASSERT_FALSE(change);
  EXPECT_EQ(change.error().code, EBUSY);
  EXPECT_TRUE(client.set_auto_mode(kMlx, 1, RDMA_COUNTER_MASK_QP_TYPE));  // no change: fine
  EXPECT_EQ(mode(kMlx, 1).auto_mask, static_cast<uint32_t>(RDMA_COUNTER_MASK_QP_TYPE));

  // Off while a set is still bound: the kernel reports MANUAL until it goes.
  ASSERT_TRUE(client.set_auto_mode(kMlx, 1, 0));
  EXPECT_EQ(mode(kMlx, 1).mode, kManual);
  ASSERT_TRUE(set_of(qp));
  kernel.destroy_qp(kMlx, qp);
  EXPECT_EQ(mode(kMlx, 1).mode, kNone);
}

TEST_F(FakeKernelTest, ManualBindInAutoModeIsInvalid) {
  const uint32_t qp = kernel.create_qp(kMlx, 1, kRc, 500);  // created before auto: unbound
  ASSERT_TRUE(client.set_auto_mode(kMlx, 1, RDMA_COUNTER_MASK_PID));
  auto r = client.bind_qp(kMlx, 1, qp);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EINVAL);
  EXPECT_TRUE(sets().empty());

  // Unbinding what auto mode bound is refused while it is on.
  const uint32_t later = kernel.create_qp(kMlx, 1, kRc, 500);
  auto s = set_of(later);
  ASSERT_TRUE(s);
  Status u = client.unbind_qp(kMlx, 1, s->id, later);
  ASSERT_FALSE(u);
  EXPECT_EQ(u.error().code, EINVAL);
  EXPECT_TRUE(set_of(later));
}

TEST_F(FakeKernelTest, DriverWithoutPerQpCountersAcceptsAutoButBindsNothing) {
  const uint32_t qp = kernel.create_qp(kRxe, 1, kRc, 600);
  auto r = client.bind_qp(kRxe, 1, qp);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ENOMEM);
  EXPECT_EQ(mode(kRxe, 1).mode, kNone);

  ASSERT_TRUE(client.set_auto_mode(kRxe, 1, RDMA_COUNTER_MASK_QP_TYPE));
  EXPECT_EQ(mode(kRxe, 1).mode, kAuto);
  EXPECT_EQ(mode(kRxe, 1).auto_mask, static_cast<uint32_t>(RDMA_COUNTER_MASK_QP_TYPE));
  const uint32_t after = kernel.create_qp(kRxe, 1, kRc, 600);
  EXPECT_TRUE(sets(kRxe).empty());
  auto qps = client.qps(kRxe);
  ASSERT_TRUE(qps) << qps.error().message;
  EXPECT_EQ(qps->size(), 2U);
  EXPECT_TRUE(
      std::any_of(qps->begin(), qps->end(), [&](const auto& q) { return q.lqpn == after; }));
}

TEST_F(FakeKernelTest, WritesNeedPrivilegeAndInjectedErrorsComeBack) {
  const uint32_t qp = kernel.create_qp(kMlx, 1, kRc, 500);
  auto bound = client.bind_qp(kMlx, 1, qp);
  ASSERT_TRUE(bound);

  kernel.privileged = false;
  Status a = client.set_auto_mode(kMlx, 2, RDMA_COUNTER_MASK_PID);
  auto b = client.bind_qp(kMlx, 1, kernel.create_qp(kMlx, 1, kRc, 500));
  Status u = client.unbind_qp(kMlx, 1, bound->counter_id, qp);
  for (int code : {a ? 0 : a.error().code, b ? 0 : b.error().code, u ? 0 : u.error().code}) {
    EXPECT_EQ(code, EPERM);
  }
  // Reads need no privilege, and nothing changed.
  EXPECT_EQ(mode(kMlx, 2).mode, kNone);
  EXPECT_EQ(sets().size(), 1U);

  kernel.privileged = true;
  kernel.stat_set_error = EOPNOTSUPP;
  Status injected = client.set_auto_mode(kMlx, 2, RDMA_COUNTER_MASK_PID);
  ASSERT_FALSE(injected);
  EXPECT_EQ(injected.error().code, EOPNOTSUPP);
  Status injected_del = client.unbind_qp(kMlx, 1, bound->counter_id, qp);
  ASSERT_FALSE(injected_del);
  EXPECT_EQ(injected_del.error().code, EOPNOTSUPP);
  EXPECT_EQ(sets().size(), 1U);
}

// Creates user QPs on port 1 in auto mode with `mask` and checks the sets
// against a grouping computed from the QPs' type and pid.
void check_auto_grouping(FakeNldev& kernel, nldev::Client& client, uint32_t mask) {
  ASSERT_TRUE(client.set_auto_mode(kMlx, 1, mask));
  const std::vector<std::pair<uint8_t, uint32_t>> made = {{kRc, 10}, {kUd, 10}, {kRc, 10},
                                                          {kRc, 11}, {kUd, 12}, {kRc, 12}};
  using Key = std::tuple<std::optional<uint8_t>, std::optional<uint32_t>>;
  std::map<Key, std::set<uint32_t>> want;
  for (auto [type, pid] : made) {
    const uint32_t lqpn = kernel.create_qp(kMlx, 1, type, pid);
    Key key{(mask & RDMA_COUNTER_MASK_QP_TYPE) != 0 ? std::optional<uint8_t>(type) : std::nullopt,
            (mask & RDMA_COUNTER_MASK_PID) != 0 ? std::optional<uint32_t>(pid) : std::nullopt};
    want[key].insert(lqpn);
  }
  auto got = client.counter_sets(kMlx);
  ASSERT_TRUE(got) << got.error().message;
  std::map<Key, std::set<uint32_t>> seen;
  std::set<uint32_t> ids;
  for (const auto& s : *got) {
    EXPECT_EQ(s.mode, kAuto);
    EXPECT_EQ(s.port, 1U);
    EXPECT_TRUE(ids.insert(s.id).second) << "duplicate set id " << s.id;
    auto& members = seen[Key{s.qp_type, s.pid}];
    EXPECT_TRUE(members.empty()) << "two sets with the same criteria";
    members.insert(s.lqpns.begin(), s.lqpns.end());
    ASSERT_EQ(s.counters.size(), kernel.device(kMlx)->qp_counter_names.size());
  }
  EXPECT_EQ(seen, want);
}

TEST_F(FakeKernelTest, AutoBindingByType) {
  check_auto_grouping(kernel, client, RDMA_COUNTER_MASK_QP_TYPE);
}

TEST_F(FakeKernelTest, AutoBindingByPid) {
  check_auto_grouping(kernel, client, RDMA_COUNTER_MASK_PID);
}

TEST_F(FakeKernelTest, AutoBindingByTypeAndPid) {
  check_auto_grouping(kernel, client, RDMA_COUNTER_MASK_QP_TYPE | RDMA_COUNTER_MASK_PID);
}

TEST_F(FakeKernelTest, KernelQpsAreNeverAutoBound) {
  ASSERT_TRUE(client.set_auto_mode(kMlx, 1, RDMA_COUNTER_MASK_QP_TYPE));
  const uint32_t kqp = kernel.create_qp(kMlx, 1, kUd, std::nullopt, "ib_ipoib");
  const uint32_t uqp = kernel.create_qp(kMlx, 1, kUd, 42);
  EXPECT_FALSE(set_of(kqp));
  ASSERT_TRUE(set_of(uqp));
  auto qps = client.qps(kMlx);
  ASSERT_TRUE(qps) << qps.error().message;
  ASSERT_EQ(qps->size(), 2U);
  for (const auto& q : *qps) {
    if (q.lqpn == kqp) {
      EXPECT_EQ(q.kern_name, "ib_ipoib");
      EXPECT_FALSE(q.pid);
    } else {
      EXPECT_EQ(q.lqpn, uqp);
      EXPECT_EQ(q.pid, 42U);
      EXPECT_FALSE(q.kern_name);
    }
    EXPECT_EQ(q.type, kUd);
    EXPECT_EQ(q.port, 1U);
  }
}

TEST_F(FakeKernelTest, QpsCreatedBeforeAutoModeStayUnbound) {
  const uint32_t before = kernel.create_qp(kMlx, 1, kRc, 70);
  ASSERT_TRUE(client.set_auto_mode(kMlx, 1, RDMA_COUNTER_MASK_PID));
  const uint32_t after = kernel.create_qp(kMlx, 1, kRc, 70);
  EXPECT_FALSE(set_of(before));
  auto s = set_of(after);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->lqpns, std::vector<uint32_t>{after});
  EXPECT_EQ(s->pid, 70U);
  EXPECT_FALSE(s->qp_type);
}

TEST_F(FakeKernelTest, ExitingProcessFreesItsSets) {
  ASSERT_TRUE(client.set_auto_mode(kMlx, 1, RDMA_COUNTER_MASK_PID));
  const uint32_t a1 = kernel.create_qp(kMlx, 1, kRc, 10);
  const uint32_t a2 = kernel.create_qp(kMlx, 1, kUd, 10);
  const uint32_t b = kernel.create_qp(kMlx, 1, kRc, 11);
  const uint32_t other_dev = kernel.create_qp(kRxe, 1, kRc, 10);
  ASSERT_EQ(sets().size(), 2U);
  const auto sb = set_of(b);
  ASSERT_TRUE(sb);

  kernel.exit_process(10);
  auto left = sets();
  ASSERT_EQ(left.size(), 1U);
  EXPECT_EQ(left[0].id, sb->id);
  auto qps = client.qps(kMlx);
  ASSERT_TRUE(qps);
  ASSERT_EQ(qps->size(), 1U);
  EXPECT_EQ((*qps)[0].lqpn, b);
  auto rxe_qps = client.qps(kRxe);
  ASSERT_TRUE(rxe_qps);
  EXPECT_TRUE(std::none_of(rxe_qps->begin(), rxe_qps->end(),
                           [&](const auto& q) { return q.lqpn == other_dev; }));
  EXPECT_EQ(mode(kMlx, 1).mode, kAuto);  // auto mode stays on with no set left
  (void)a1;
  (void)a2;
}

TEST_F(FakeKernelTest, UnbindFreesAnEmptySetAndThePortReturnsToNone) {
  const uint32_t q1 = kernel.create_qp(kMlx, 1, kRc, 5);
  const uint32_t q2 = kernel.create_qp(kMlx, 1, kRc, 5);
  auto first = client.bind_qp(kMlx, 1, q1);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->lqpn, q1);
  auto second = client.bind_qp(kMlx, 1, q2, first->counter_id);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->counter_id, first->counter_id);
  auto s = set_of(q1);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->id, first->counter_id);
  EXPECT_EQ(s->mode, kManual);
  EXPECT_EQ(s->lqpns, (std::vector<uint32_t>{std::min(q1, q2), std::max(q1, q2)}));
  EXPECT_EQ(mode(kMlx, 1).mode, kManual);

  ASSERT_TRUE(client.unbind_qp(kMlx, 1, first->counter_id, q1));
  EXPECT_EQ(set_of(q2)->lqpns, std::vector<uint32_t>{q2});
  EXPECT_EQ(mode(kMlx, 1).mode, kManual);
  Status again = client.unbind_qp(kMlx, 1, first->counter_id, q1);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, EINVAL);

  ASSERT_TRUE(client.unbind_qp(kMlx, 1, first->counter_id, q2));
  EXPECT_TRUE(sets().empty());
  EXPECT_EQ(mode(kMlx, 1).mode, kNone);
}

TEST_F(FakeKernelTest, ManualBindRefusals) {
  const uint32_t user = kernel.create_qp(kMlx, 1, kRc, 5);
  const uint32_t kern = kernel.create_qp(kMlx, 1, kRc, std::nullopt, "rdma_cm");
  const uint32_t on_port2 = kernel.create_qp(kMlx, 2, kRc, 5);
  auto set1 = client.bind_qp(kMlx, 1, user);
  ASSERT_TRUE(set1);

  auto code = [](const Result<nldev::BindResult>& r) { return r ? 0 : r.error().code; };
  EXPECT_EQ(code(client.bind_qp(kMlx, 1, 0xbeef)), ENOENT);                        // no such QP
  EXPECT_EQ(code(client.bind_qp(kMlx, 1, on_port2)), EINVAL);                      // other port
  EXPECT_EQ(code(client.bind_qp(kMlx, 1, user)), ENOMEM);                          // already bound
  EXPECT_EQ(code(client.bind_qp(kMlx, 1, user, set1->counter_id)), EINVAL);        // already bound
  EXPECT_EQ(code(client.bind_qp(kMlx, 1, kern, set1->counter_id)), EINVAL);        // owner differs
  EXPECT_EQ(code(client.bind_qp(kMlx, 2, on_port2, set1->counter_id)), EINVAL);    // set elsewhere
  EXPECT_EQ(code(client.bind_qp(kMlx, 1, user, set1->counter_id + 100)), ENOENT);  // no such set
  EXPECT_EQ(sets().size(), 1U);

  // A kernel QP may have a set of its own.
  auto kset = client.bind_qp(kMlx, 1, kern);
  ASSERT_TRUE(kset) << kset.error().message;
  EXPECT_NE(kset->counter_id, set1->counter_id);
  EXPECT_EQ(sets().size(), 2U);
}

TEST_F(FakeKernelTest, SetCountersWrapAt32BitsButPortTotalsDoNot) {
  for (bool narrow : {true, false}) {
    kernel.device(kMlx)->counter_values_32bit = narrow;
    const uint32_t qp = kernel.create_qp(kMlx, 1, kRc, 5);
    auto b = client.bind_qp(kMlx, 1, qp);
    ASSERT_TRUE(b) << b.error().message;
    const uint64_t port_before = port_total("out_of_sequence");
    const std::vector<uint64_t> deltas = {0xfffffff0ULL, 0x25ULL, 0x100000000ULL};
    uint64_t sum = 0;
    for (uint64_t d : deltas) {
      kernel.traffic(kMlx, qp, "out_of_sequence", d);
      sum += d;
    }
    auto s = set_of(qp);
    ASSERT_TRUE(s);
    EXPECT_EQ(set_value(*s, "out_of_sequence"), narrow ? sum % (1ULL << 32) : sum) << narrow;
    EXPECT_EQ(port_total("out_of_sequence"), port_before + sum);
    kernel.destroy_qp(kMlx, qp);
  }
}

TEST_F(FakeKernelTest, PortTotalsIncludeBoundAndFreedSetsTraffic) {
  const uint64_t start = port_total("out_of_sequence");
  const uint32_t bound = kernel.create_qp(kMlx, 1, kRc, 5);
  const uint32_t unbound = kernel.create_qp(kMlx, 1, kRc, 6);
  ASSERT_TRUE(client.bind_qp(kMlx, 1, bound));
  const uint64_t a = 37;
  const uint64_t b = 5;
  kernel.traffic(kMlx, bound, "out_of_sequence", a);
  kernel.traffic(kMlx, unbound, "out_of_sequence", b);
  EXPECT_EQ(set_value(*set_of(bound), "out_of_sequence"), a);
  EXPECT_EQ(port_total("out_of_sequence"), start + a + b);

  // A counter the port did not list yet appears there.
  kernel.traffic(kMlx, bound, "rx_write_requests", 9);
  EXPECT_EQ(port_total("rx_write_requests"), 9U);
  EXPECT_EQ(set_value(*set_of(bound), "rx_write_requests"), 9U);

  // The freed set's history stays in the port total.
  kernel.destroy_qp(kMlx, bound);
  EXPECT_TRUE(sets().empty());
  EXPECT_EQ(port_total("out_of_sequence"), start + a + b);
  EXPECT_EQ(port_total("rx_write_requests"), 9U);
}

// The messages of one type in a reply, counted per datagram.
std::vector<std::size_t> messages_per_datagram(const netlink::Reply& reply, uint16_t cmd) {
  std::vector<std::size_t> out;
  for (const auto& d : reply.datagrams) {
    std::size_t n = 0;
    const auto* msg = reinterpret_cast<const nlmsghdr*>(d.data());
    auto len = static_cast<int>(d.size());
    while (mnl_nlmsg_ok(msg, len)) {
      if (msg->nlmsg_type == testing::nldev_type(cmd)) ++n;
      msg = mnl_nlmsg_next(msg, &len);
    }
    out.push_back(n);
  }
  return out;
}

std::size_t total(const std::vector<std::size_t>& v) {
  std::size_t n = 0;
  for (auto x : v) n += x;
  return n;
}

TEST_F(FakeKernelTest, DumpsSplitAcrossMessagesDecodeWhole) {
  kernel.sets_per_message = 2;
  kernel.messages_per_datagram = 1;
  ASSERT_TRUE(client.set_auto_mode(kMlx, 1, RDMA_COUNTER_MASK_PID));
  const uint32_t count = 7;
  std::set<uint32_t> made;
  for (uint32_t pid = 100; pid < 100 + count; ++pid)
    made.insert(kernel.create_qp(kMlx, 1, kRc, pid));

  auto raw = kernel.exchange(nldev::build_counter_sets_dump(kMlx));
  ASSERT_TRUE(raw);
  const auto per = messages_per_datagram(*raw, RDMA_NLDEV_CMD_STAT_GET);
  const std::size_t want_msgs = (count + kernel.sets_per_message - 1) / kernel.sets_per_message;
  EXPECT_EQ(total(per), want_msgs);
  EXPECT_EQ(raw->datagrams.size(), want_msgs + 1);  // one message each, then NLMSG_DONE
  EXPECT_TRUE(netlink::ends_exchange(raw->datagrams.back()));

  auto got = sets();
  ASSERT_EQ(got.size(), count);
  std::set<uint32_t> listed;
  for (const auto& s : got) listed.insert(s.lqpns.begin(), s.lqpns.end());
  EXPECT_EQ(listed, made);

  auto qp_raw = kernel.exchange(nldev::build_qp_dump(kMlx));
  ASSERT_TRUE(qp_raw);
  EXPECT_EQ(total(messages_per_datagram(*qp_raw, RDMA_NLDEV_CMD_RES_QP_GET)), want_msgs);
  auto qps = client.qps(kMlx);
  ASSERT_TRUE(qps) << qps.error().message;
  std::set<uint32_t> qp_numbers;
  for (const auto& q : *qps) qp_numbers.insert(q.lqpn);
  EXPECT_EQ(qp_numbers, made);
}

TEST_F(FakeKernelTest, EmptyDumpsAreJustDone) {
  for (const auto& request : {nldev::build_counter_sets_dump(kMlx), nldev::build_qp_dump(kMlx)}) {
    auto raw = kernel.exchange(request);
    ASSERT_TRUE(raw);
    ASSERT_EQ(raw->datagrams.size(), 1U);
    EXPECT_EQ(raw->datagrams[0], testing::done_message());
  }
  EXPECT_TRUE(sets().empty());
}

TEST_F(FakeKernelTest, CounterDumpRefusesUnknownOrMissingDevices) {
  auto unknown = client.counter_sets(99);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, EINVAL);

  testing::NlMessage no_dev(testing::nldev_type(RDMA_NLDEV_CMD_STAT_GET),
                            NLM_F_REQUEST | NLM_F_DUMP);
  no_dev.u32(RDMA_NLDEV_ATTR_STAT_RES, RDMA_NLDEV_ATTR_RES_QP);
  auto raw = kernel.exchange(no_dev.bytes());
  ASSERT_TRUE(raw);
  auto decoded = nldev::decode_counter_sets(*raw);
  ASSERT_FALSE(decoded);
  EXPECT_EQ(decoded.error().code, EINVAL);

  auto qps = client.qps(99);
  ASSERT_FALSE(qps);
  EXPECT_EQ(qps.error().code, EINVAL);
}

TEST_F(FakeKernelTest, CounterDumpFiltersByPort) {
  const uint32_t on1 = kernel.create_qp(kMlx, 1, kRc, 5);
  const uint32_t on2 = kernel.create_qp(kMlx, 2, kRc, 5);
  ASSERT_TRUE(client.bind_qp(kMlx, 1, on1));
  ASSERT_TRUE(client.bind_qp(kMlx, 2, on2));
  for (uint32_t port : {1U, 2U}) {
    testing::NlMessage req(testing::nldev_type(RDMA_NLDEV_CMD_STAT_GET),
                           NLM_F_REQUEST | NLM_F_DUMP);
    req.u32(RDMA_NLDEV_ATTR_DEV_INDEX, kMlx)
        .u32(RDMA_NLDEV_ATTR_PORT_INDEX, port)
        .u32(RDMA_NLDEV_ATTR_STAT_RES, RDMA_NLDEV_ATTR_RES_QP);
    auto raw = kernel.exchange(req.bytes());
    ASSERT_TRUE(raw);
    auto got = nldev::decode_counter_sets(*raw);
    ASSERT_TRUE(got) << got.error().message;
    ASSERT_EQ(got->size(), 1U);
    EXPECT_EQ((*got)[0].port, port);
    EXPECT_EQ((*got)[0].lqpns, std::vector<uint32_t>{port == 1 ? on1 : on2});
  }
}

TEST_F(FakeKernelTest, InterruptedCounterDumpsAreRetried) {
  ASSERT_TRUE(client.bind_qp(kMlx, 1, kernel.create_qp(kMlx, 1, kRc, 5)));
  kernel.requests.clear();
  kernel.interrupt_next_dumps = 1;
  auto got = client.counter_sets(kMlx);
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(got->size(), 1U);
  EXPECT_EQ(kernel.requests.size(), 2U);
  EXPECT_EQ(kernel.requests_for(kMlx), 2U);
  EXPECT_EQ(kernel.requests.back().cmd, RDMA_NLDEV_CMD_STAT_GET);
  EXPECT_NE(kernel.requests.back().flags & NLM_F_DUMP, 0);
}

TEST_F(FakeKernelTest, DefaultCountersStillAnswerBesideTheModeQuery) {
  // The same command without STAT_RES is the port's default counter.
  const uint64_t total = port_total("out_of_sequence");
  EXPECT_EQ(total, 1000U);
  EXPECT_EQ(mode(kMlx, 1).mode, kNone);
}

}  // namespace
}  // namespace rdma_exporter
