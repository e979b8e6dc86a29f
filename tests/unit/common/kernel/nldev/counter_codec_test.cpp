// The per-QP counter codecs, fed kernel-shaped messages built with libmnl.

#include "common/kernel/nldev/counter_codec.hpp"

#include <gtest/gtest.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_netlink.h>

#include <map>
#include <set>

#include "common/kernel/nldev/codec.hpp"
#include "tests/fake_kernel/nl_message.hpp"

namespace rdma_exporter::nldev {
namespace {

using testing::ack_message;
using testing::datagram;
using testing::done_message;
using testing::error_message;
using testing::nldev_type;
using testing::NlMessage;

constexpr uint8_t kRc = IB_UVERBS_QPT_RC;
constexpr uint8_t kUd = IB_UVERBS_QPT_UD;

// What one STAT_COUNTER_ENTRY says, for building replies. The default port
// is neither counter mode's number (AUTO 1, MANUAL 2), so reading one for
// the other shows.
struct SetSpec {
  uint32_t port = 3;
  uint32_t id = 0;
  uint32_t mode = RDMA_COUNTER_MODE_AUTO;
  std::optional<uint8_t> qp_type;
  std::optional<uint32_t> pid;
  std::optional<std::string> kern_name;
  std::vector<uint32_t> lqpns;
  std::vector<std::pair<std::string, uint64_t>> counters;
};

void put_counters(NlMessage& m, const std::vector<std::pair<std::string, uint64_t>>& counters) {
  m.begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
  for (const auto& [name, value] : counters) {
    m.begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)
        .str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, name)
        .u64(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, value)
        .end_nest();
  }
  m.end_nest();
}

void put_set(NlMessage& m, const SetSpec& s) {
  m.begin_nest(RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY)
      .u32(RDMA_NLDEV_ATTR_PORT_INDEX, s.port)
      .u32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID, s.id)
      .u32(RDMA_NLDEV_ATTR_STAT_MODE, s.mode);
  if (s.qp_type) m.u8(RDMA_NLDEV_ATTR_RES_TYPE, *s.qp_type);
  if (s.pid) m.u32(RDMA_NLDEV_ATTR_RES_PID, *s.pid);
  if (s.kern_name) m.str(RDMA_NLDEV_ATTR_RES_KERN_NAME, *s.kern_name);
  m.begin_nest(RDMA_NLDEV_ATTR_RES_QP);
  for (uint32_t q : s.lqpns) {
    m.begin_nest(RDMA_NLDEV_ATTR_RES_QP_ENTRY).u32(RDMA_NLDEV_ATTR_RES_LQPN, q).end_nest();
  }
  m.end_nest();
  put_counters(m, s.counters);
  m.end_nest();
}

NlMessage sets_header(uint32_t dev = 7, const std::string& name = "mlx5_0") {
  NlMessage m(nldev_type(RDMA_NLDEV_CMD_STAT_GET), NLM_F_MULTI);
  m.u32(RDMA_NLDEV_ATTR_DEV_INDEX, dev).str(RDMA_NLDEV_ATTR_DEV_NAME, name);
  return m;
}

Bytes sets_msg(const std::vector<SetSpec>& sets, uint32_t dev = 7,
               const std::string& name = "mlx5_0") {
  NlMessage m = sets_header(dev, name);
  m.begin_nest(RDMA_NLDEV_ATTR_STAT_COUNTER);
  for (const auto& s : sets) put_set(m, s);
  m.end_nest();
  return m.bytes();
}

// A counter dump reply: every message then NLMSG_DONE, two to a datagram.
Reply dump_reply(std::vector<Bytes> messages) {
  messages.push_back(done_message());
  Reply r;
  for (std::size_t i = 0; i < messages.size(); i += 2) {
    std::vector<Bytes> part(messages.begin() + static_cast<long>(i),
                            messages.begin() + static_cast<long>(std::min(i + 2, messages.size())));
    r.datagrams.push_back(datagram(part));
  }
  return r;
}

void expect_set(const CounterSet& got, const SetSpec& want, uint32_t dev, const std::string& name) {
  EXPECT_EQ(got.dev_index, dev);
  EXPECT_EQ(got.dev_name, name);
  EXPECT_EQ(got.port, want.port);
  EXPECT_EQ(got.id, want.id);
  EXPECT_EQ(got.mode, want.mode);
  EXPECT_EQ(got.qp_type, want.qp_type);
  EXPECT_EQ(got.pid, want.pid);
  EXPECT_EQ(got.kern_name, want.kern_name);
  EXPECT_EQ(got.lqpns, want.lqpns);
  ASSERT_EQ(got.counters.size(), want.counters.size());
  for (std::size_t i = 0; i < want.counters.size(); ++i) {
    EXPECT_EQ(got.counters[i].name, want.counters[i].first);
    EXPECT_EQ(got.counters[i].value, want.counters[i].second);
  }
}

// The u32 attributes of a request, by type; other sizes are left out.
std::map<uint16_t, uint32_t> u32_attrs(const Bytes& request) {
  std::map<uint16_t, uint32_t> out;
  for (const nlattr* a : testing::attributes(reinterpret_cast<const nlmsghdr*>(request.data()))) {
    if (mnl_attr_get_payload_len(a) == sizeof(uint32_t)) {
      out[mnl_attr_get_type(a)] = mnl_attr_get_u32(a);
    }
  }
  return out;
}

const nlmsghdr& header(const Bytes& request) {
  return *reinterpret_cast<const nlmsghdr*>(request.data());
}

// --- counter sets --------------------------------------------------------------

TEST(CounterCodec, AutoSetsByTypeCarryTheTypeAndNoOwner) {
  const std::vector<SetSpec> sets = {
      {.port = 3,
       .id = 4,
       .qp_type = kRc,
       .lqpns = {0x107, 0x10a},
       .counters = {{"rx_write_requests", 120}, {"out_of_sequence", 130}}},
      {.port = 5,
       .id = 9,
       .qp_type = kUd,
       .lqpns = {0x200},
       .counters = {{"rx_read_requests", 140}}},
  };
  auto r = decode_counter_sets(dump_reply({sets_msg(sets, 13, "mlx5_2")}));
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), sets.size());
  for (std::size_t i = 0; i < sets.size(); ++i) expect_set((*r)[i], sets[i], 13, "mlx5_2");
}

TEST(CounterCodec, AutoSetsByPidAndKernelNameCarryTheirOwner) {
  const std::vector<SetSpec> sets = {
      {.id = 4, .pid = 4242, .lqpns = {17}, .counters = {{"packet_seq_err", 500}}},
      {.id = 5, .qp_type = kRc, .pid = 77, .lqpns = {18, 19}, .counters = {}},
      {.id = 6,
       .kern_name = "ib_ipoib",
       .lqpns = {20},
       .counters = {{"local_ack_timeout_err", 100}}},
  };
  auto r = decode_counter_sets(dump_reply({sets_msg(sets)}));
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), sets.size());
  for (std::size_t i = 0; i < sets.size(); ++i) expect_set((*r)[i], sets[i], 7, "mlx5_0");
}

TEST(CounterCodec, ManualSetsHaveNoCriteria) {
  const std::vector<SetSpec> sets = {
      {.id = 11,
       .mode = RDMA_COUNTER_MODE_MANUAL,
       .lqpns = {300, 301, 302},
       .counters = {{"rx_write_requests", 1ULL << 40}}},
  };
  auto r = decode_counter_sets(dump_reply({sets_msg(sets)}));
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 1U);
  expect_set((*r)[0], sets[0], 7, "mlx5_0");
}

TEST(CounterCodec, MultiMessageDumpConcatenatesInOrder) {
  std::vector<std::vector<SetSpec>> parts;
  uint32_t id = 10;  // above the port and mode numbers
  for (std::size_t part = 0; part < 3; ++part) {
    std::vector<SetSpec> sets;
    for (std::size_t k = 0; k <= part; ++k, ++id) {
      sets.push_back({.id = id,
                      .pid = 1000 + id,
                      .lqpns = {100 + id},
                      .counters = {{"rx_write_requests", id * 10}}});
    }
    parts.push_back(sets);
  }
  std::vector<Bytes> msgs;
  std::vector<SetSpec> all;
  for (const auto& p : parts) {
    msgs.push_back(sets_msg(p));
    all.insert(all.end(), p.begin(), p.end());
  }
  const Reply reply = dump_reply(msgs);
  ASSERT_GT(reply.datagrams.size(), 1U);
  auto r = decode_counter_sets(reply);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), all.size());
  for (std::size_t i = 0; i < all.size(); ++i) expect_set((*r)[i], all[i], 7, "mlx5_0");
}

TEST(CounterCodec, EmptyDumpsAreEmptyLists) {
  auto none = decode_counter_sets(Reply{{done_message()}});
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE(none->empty());

  // A message whose table is empty or absent (all sets were on other ports).
  NlMessage no_table = sets_header();
  auto r = decode_counter_sets(dump_reply({sets_msg({}), no_table.bytes()}));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->empty());

  auto qps = decode_qps(Reply{{done_message()}});
  ASSERT_TRUE(qps) << qps.error().message;
  EXPECT_TRUE(qps->empty());
}

TEST(CounterCodec, SetWithoutQpTableIsASetWithoutQps) {
  NlMessage m = sets_header();
  m.begin_nest(RDMA_NLDEV_ATTR_STAT_COUNTER)
      .begin_nest(RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY)
      .u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1)
      .u32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID, 6)
      .u32(RDMA_NLDEV_ATTR_STAT_MODE, RDMA_COUNTER_MODE_MANUAL);
  put_counters(m, {{"rx_write_requests", 8}});
  m.end_nest().end_nest();
  auto r = decode_counter_sets(dump_reply({m.bytes()}));
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 1U);
  EXPECT_EQ((*r)[0].id, 6U);
  EXPECT_TRUE((*r)[0].lqpns.empty());
}

// A set whose QP table holds ranges, the way the kernel lists SRQ members.
Bytes set_with_qp_entries(const std::function<void(NlMessage&)>& entries) {
  NlMessage m = sets_header();
  m.begin_nest(RDMA_NLDEV_ATTR_STAT_COUNTER)
      .begin_nest(RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY)
      .u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1)
      .u32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID, 2)
      .u32(RDMA_NLDEV_ATTR_STAT_MODE, RDMA_COUNTER_MODE_MANUAL)
      .begin_nest(RDMA_NLDEV_ATTR_RES_QP);
  entries(m);
  m.end_nest();
  put_counters(m, {});
  m.end_nest().end_nest();
  return m.bytes();
}

void put_range(NlMessage& m, uint32_t min, uint32_t max) {
  m.begin_nest(RDMA_NLDEV_ATTR_RES_QP_ENTRY)
      .u32(RDMA_NLDEV_ATTR_MIN_RANGE, min)
      .u32(RDMA_NLDEV_ATTR_MAX_RANGE, max)
      .end_nest();
}

TEST(CounterCodec, QpRangeEntriesExpandToEveryQp) {
  const std::vector<std::pair<uint32_t, uint32_t>> ranges = {
      {10, 13}, {40, 40}, {0xfffffffe, 0xffffffff}};
  const uint32_t single = 99;
  Bytes msg = set_with_qp_entries([&](NlMessage& m) {
    for (auto [lo, hi] : ranges) put_range(m, lo, hi);
    m.begin_nest(RDMA_NLDEV_ATTR_RES_QP_ENTRY).u32(RDMA_NLDEV_ATTR_RES_LQPN, single).end_nest();
  });
  std::vector<uint32_t> want;
  for (auto [lo, hi] : ranges) {
    for (uint64_t q = lo; q <= hi; ++q) want.push_back(static_cast<uint32_t>(q));
  }
  want.push_back(single);
  auto r = decode_counter_sets(dump_reply({msg}));
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 1U);
  EXPECT_EQ((*r)[0].lqpns, want);
}

// Each range is plausible alone, but 600 of them would ask for 600 million
// QP numbers (2.4 GB) from a 12 KB reply: the set is refused once it passes
// 2^20 QP numbers, and a set of exactly 2^20 is still read.
TEST(CounterCodec, ManyLargeQpRangesAreRefusedBeforeTheyExpand) {
  auto many = decode_counter_sets(dump_reply({set_with_qp_entries([](NlMessage& m) {
    for (uint32_t i = 0; i < 600; ++i) put_range(m, i << 20, (i << 20) + (1U << 20) - 1);
  })}));
  ASSERT_FALSE(many);
  EXPECT_EQ(many.error().code, EBADMSG);
  EXPECT_EQ(many.error().message,
            "malformed netlink reply: a counter set with more than 1048576 QP numbers");
  auto full = decode_counter_sets(dump_reply({set_with_qp_entries([](NlMessage& m) {
    put_range(m, 0, (1U << 19) - 1);
    put_range(m, 1U << 19, (1U << 20) - 1);
  })}));
  ASSERT_TRUE(full) << full.error().message;
  EXPECT_EQ((*full)[0].lqpns.size(), 1U << 20);
  EXPECT_EQ((*full)[0].lqpns.back(), (1U << 20) - 1);
  // One QP more, as a single LQPN entry, is one too many.
  auto over = decode_counter_sets(dump_reply({set_with_qp_entries([](NlMessage& m) {
    put_range(m, 0, (1U << 20) - 1);
    m.begin_nest(RDMA_NLDEV_ATTR_RES_QP_ENTRY).u32(RDMA_NLDEV_ATTR_RES_LQPN, 1U << 21).end_nest();
  })}));
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().message,
            "malformed netlink reply: a counter set with more than 1048576 QP numbers");
}

TEST(CounterCodec, ImplausibleQpRangesAreErrors) {
  for (const auto& range :
       {std::pair<uint32_t, uint32_t>{20, 10}, {0, 0xffffffff}, {5, 5 + (1U << 20)}}) {
    auto r = decode_counter_sets(dump_reply(
        {set_with_qp_entries([&](NlMessage& m) { put_range(m, range.first, range.second); })}));
    ASSERT_FALSE(r) << range.first << ".." << range.second;
    EXPECT_EQ(r.error().code, EBADMSG);
    EXPECT_NE(r.error().message.find("RES_QP_ENTRY"), std::string::npos) << r.error().message;
  }
  // Half a range is no range either.
  auto half = decode_counter_sets(dump_reply({set_with_qp_entries([](NlMessage& m) {
    m.begin_nest(RDMA_NLDEV_ATTR_RES_QP_ENTRY).u32(RDMA_NLDEV_ATTR_MIN_RANGE, 3).end_nest();
  })}));
  ASSERT_FALSE(half);
  EXPECT_NE(half.error().message.find("RES_LQPN"), std::string::npos) << half.error().message;
}

// A counter entry with one required attribute left out.
Bytes set_without(uint16_t left_out) {
  NlMessage m = sets_header();
  m.begin_nest(RDMA_NLDEV_ATTR_STAT_COUNTER).begin_nest(RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY);
  if (left_out != RDMA_NLDEV_ATTR_PORT_INDEX) m.u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1);
  if (left_out != RDMA_NLDEV_ATTR_STAT_COUNTER_ID) m.u32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID, 3);
  if (left_out != RDMA_NLDEV_ATTR_STAT_MODE) {
    m.u32(RDMA_NLDEV_ATTR_STAT_MODE, RDMA_COUNTER_MODE_AUTO);
  }
  m.begin_nest(RDMA_NLDEV_ATTR_RES_QP).begin_nest(RDMA_NLDEV_ATTR_RES_QP_ENTRY);
  if (left_out != RDMA_NLDEV_ATTR_RES_LQPN) m.u32(RDMA_NLDEV_ATTR_RES_LQPN, 8);
  m.end_nest().end_nest();
  if (left_out != RDMA_NLDEV_ATTR_STAT_HWCOUNTERS) put_counters(m, {{"out_of_sequence", 1}});
  m.end_nest().end_nest();
  return m.bytes();
}

TEST(CounterCodec, MissingRequiredAttributesInASetAreNamed) {
  const std::vector<std::pair<uint16_t, std::string>> required = {
      {RDMA_NLDEV_ATTR_PORT_INDEX, "PORT_INDEX"},
      {RDMA_NLDEV_ATTR_STAT_COUNTER_ID, "STAT_COUNTER_ID"},
      {RDMA_NLDEV_ATTR_STAT_MODE, "STAT_MODE"},
      {RDMA_NLDEV_ATTR_RES_LQPN, "RES_LQPN"},
      {RDMA_NLDEV_ATTR_STAT_HWCOUNTERS, "STAT_HWCOUNTERS"},
  };
  // The complete entry decodes, so each failure below is the left-out attribute's.
  auto whole = decode_counter_sets(dump_reply({set_without(0)}));
  ASSERT_TRUE(whole) << whole.error().message;
  for (const auto& [attr, name] : required) {
    auto r = decode_counter_sets(dump_reply({set_without(attr)}));
    ASSERT_FALSE(r) << name;
    EXPECT_EQ(r.error().code, EBADMSG);
    EXPECT_NE(r.error().message.find(name), std::string::npos) << r.error().message;
  }
}

TEST(CounterCodec, MissingDeviceInASetMessageIsAnError) {
  NlMessage m(nldev_type(RDMA_NLDEV_CMD_STAT_GET), NLM_F_MULTI);
  m.str(RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0");
  m.begin_nest(RDMA_NLDEV_ATTR_STAT_COUNTER).end_nest();
  auto r = decode_counter_sets(dump_reply({m.bytes()}));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("DEV_INDEX"), std::string::npos) << r.error().message;
}

TEST(CounterCodec, UnknownAttributesInsideSetsAreIgnored) {
  const SetSpec want{.port = 3,
                     .id = 8,
                     .qp_type = kRc,
                     .pid = 31,
                     .lqpns = {70, 71},
                     .counters = {{"rx_write_requests", 6}}};
  NlMessage m = sets_header();
  m.u32(950, 1);
  m.begin_nest(RDMA_NLDEV_ATTR_STAT_COUNTER);
  m.u32(951, 2);  // an unknown kind of table entry
  m.begin_nest(RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY)
      .u64(952, 3)
      .u32(RDMA_NLDEV_ATTR_PORT_INDEX, want.port)
      .u32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID, want.id)
      .u32(RDMA_NLDEV_ATTR_STAT_MODE, want.mode)
      .u8(RDMA_NLDEV_ATTR_RES_TYPE, *want.qp_type)
      .u32(RDMA_NLDEV_ATTR_RES_PID, *want.pid)
      .str(953, "future");
  m.begin_nest(RDMA_NLDEV_ATTR_RES_QP);
  m.u32(954, 4);  // an unknown kind of QP table entry
  for (uint32_t q : want.lqpns) {
    m.begin_nest(RDMA_NLDEV_ATTR_RES_QP_ENTRY)
        .u32(955, 5)
        .u32(RDMA_NLDEV_ATTR_RES_LQPN, q)
        .u32(RDMA_NLDEV_ATTR_RES_PDN, 0x99)
        .end_nest();
  }
  m.end_nest();
  put_counters(m, want.counters);
  m.end_nest().end_nest();
  auto r = decode_counter_sets(dump_reply({m.bytes()}));
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 1U);
  expect_set((*r)[0], want, 7, "mlx5_0");
}

TEST(CounterCodec, AttributesOfTheWrongSizeInASetAreErrors) {
  NlMessage m = sets_header();
  m.begin_nest(RDMA_NLDEV_ATTR_STAT_COUNTER)
      .begin_nest(RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY)
      .u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1)
      .u32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID, 1)
      .u32(RDMA_NLDEV_ATTR_STAT_MODE, RDMA_COUNTER_MODE_AUTO)
      .u32(RDMA_NLDEV_ATTR_RES_TYPE, kRc);  // u8 on the wire
  put_counters(m, {});
  m.end_nest().end_nest();
  auto r = decode_counter_sets(dump_reply({m.bytes()}));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("RES_TYPE"), std::string::npos) << r.error().message;
}

TEST(CounterCodec, EveryTruncationOfASetDumpIsAnError) {
  const Bytes good = datagram(
      {sets_msg({{.id = 1, .qp_type = kRc, .lqpns = {5, 6}, .counters = {{"a", 1}, {"b", 2}}},
                 {.id = 2, .pid = 8, .lqpns = {7}, .counters = {{"a", 3}}}}),
       done_message()});
  ASSERT_TRUE(decode_counter_sets(Reply{{good}}));
  for (std::size_t n = 0; n < good.size(); ++n) {
    Bytes cut(good.begin(), good.begin() + static_cast<long>(n));
    EXPECT_FALSE(decode_counter_sets(Reply{{cut}})) << "prefix " << n;
  }
  for (std::size_t i = 0; i < good.size(); ++i) {
    Bytes bad = good;
    bad[i] ^= 0xff;
    (void)decode_counter_sets(Reply{{bad}});  // a value or an error, never a crash
  }
}

TEST(CounterCodec, DumpErrorsAndInterruptionsComeThrough) {
  auto failed = decode_counter_sets(Reply{{done_message(-EINVAL)}});
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, EINVAL);

  Bytes msg = sets_msg({{.id = 1, .lqpns = {1}, .counters = {}}});
  reinterpret_cast<nlmsghdr*>(msg.data())->nlmsg_flags |= NLM_F_DUMP_INTR;
  auto raced = decode_counter_sets(dump_reply({msg}));
  ASSERT_FALSE(raced);
  EXPECT_EQ(raced.error().code, netlink::kDumpInterrupted);

  auto unfinished = decode_counter_sets(Reply{{sets_msg({})}});
  ASSERT_FALSE(unfinished);
  EXPECT_NE(unfinished.error().message.find("ended before"), std::string::npos);
}

// --- counter mode --------------------------------------------------------------

// The device and port numbers differ from every mode and mask.
Bytes mode_msg(uint32_t mode, std::optional<uint32_t> mask) {
  NlMessage m(nldev_type(RDMA_NLDEV_CMD_STAT_GET));
  m.u32(RDMA_NLDEV_ATTR_DEV_INDEX, 5)
      .str(RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0")
      .u32(RDMA_NLDEV_ATTR_PORT_INDEX, 4)
      .u32(RDMA_NLDEV_ATTR_STAT_MODE, mode);
  if (mask) m.u32(RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK, *mask);
  return m.bytes();
}

TEST(CounterCodec, CounterModeAndMask) {
  for (uint32_t mode : {RDMA_COUNTER_MODE_NONE, RDMA_COUNTER_MODE_MANUAL}) {
    auto r = decode_counter_mode(Reply{{mode_msg(mode, std::nullopt), ack_message()}});
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->mode, mode);
    EXPECT_EQ(r->auto_mask, 0U);
  }
  for (uint32_t mask : {1U, 2U, 3U}) {
    auto r = decode_counter_mode(Reply{{mode_msg(RDMA_COUNTER_MODE_AUTO, mask), ack_message()}});
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->mode, static_cast<uint32_t>(RDMA_COUNTER_MODE_AUTO));
    EXPECT_EQ(r->auto_mask, mask);
  }
}

TEST(CounterCodec, CounterModeNeedsExactlyOneAnswerWithAMode) {
  NlMessage no_mode(nldev_type(RDMA_NLDEV_CMD_STAT_GET));
  no_mode.u32(RDMA_NLDEV_ATTR_DEV_INDEX, 1).u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1);
  auto missing = decode_counter_mode(Reply{{no_mode.bytes(), ack_message()}});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("STAT_MODE"), std::string::npos);

  auto none = decode_counter_mode(Reply{{ack_message()}});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no answer"), std::string::npos) << none.error().message;

  const Bytes one = mode_msg(RDMA_COUNTER_MODE_NONE, std::nullopt);
  auto two = decode_counter_mode(Reply{{datagram({one, one}), ack_message()}});
  ASSERT_FALSE(two);
  EXPECT_NE(two.error().message.find("more than one"), std::string::npos) << two.error().message;
}

// --- writes ----------------------------------------------------------------------

// What the kernel answers a STAT_SET (and STAT_DEL) with; the device and
// port numbers differ from the counter ids and QP numbers the tests use.
Bytes set_answer(uint16_t type_cmd, std::optional<uint32_t> counter_id,
                 std::optional<uint32_t> lqpn) {
  NlMessage m(nldev_type(type_cmd));
  m.u32(RDMA_NLDEV_ATTR_DEV_INDEX, 2)
      .str(RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0")
      .u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1);
  if (counter_id) m.u32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID, *counter_id);
  if (lqpn) m.u32(RDMA_NLDEV_ATTR_RES_LQPN, *lqpn);
  return m.bytes();
}

TEST(CounterCodec, SetAutoModeWantsTheAnswerAndTheAck) {
  EXPECT_TRUE(decode_set_auto_mode(
      Reply{{set_answer(RDMA_NLDEV_CMD_STAT_SET, std::nullopt, std::nullopt), ack_message()}}));
  EXPECT_FALSE(decode_set_auto_mode(
      Reply{{set_answer(RDMA_NLDEV_CMD_STAT_SET, std::nullopt, std::nullopt)}}));
}

TEST(CounterCodec, KernelErrorsOnWritesCarryErrnoAndExtendedAck) {
  const std::string busy_text = "Modifying auto mode is not allowed when there is a bound QP";
  const Bytes auto_request = build_set_auto_mode(1, 1, RDMA_COUNTER_MASK_PID);
  Status busy = decode_set_auto_mode(Reply{{error_message(-EBUSY, busy_text, 0, auto_request)}});
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().code, EBUSY);
  EXPECT_NE(busy.error().message.find(busy_text), std::string::npos) << busy.error().message;
  EXPECT_NE(busy.error().message.find("RDMA_NLDEV_CMD_STAT_SET"), std::string::npos);

  const std::string perm_text = "needs CAP_NET_ADMIN";
  const Bytes bind_request = build_bind_qp(1, 1, 42, std::nullopt);
  auto perm =
      decode_bind_qp(Reply{{error_message(-EPERM, perm_text, 0, bind_request, /*capped=*/false)}});
  ASSERT_FALSE(perm);
  EXPECT_EQ(perm.error().code, EPERM);
  EXPECT_NE(perm.error().message.find(perm_text), std::string::npos) << perm.error().message;

  const Bytes unbind_request = build_unbind_qp(1, 1, 3, 42);
  Status gone = decode_unbind_qp(Reply{{error_message(-EINVAL, "", 0, unbind_request)}});
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, EINVAL);
  EXPECT_NE(gone.error().message.find("RDMA_NLDEV_CMD_STAT_DEL"), std::string::npos);
}

TEST(CounterCodec, BindAnswerNamesTheSetAndTheQp) {
  for (auto [id, lqpn] : {std::pair<uint32_t, uint32_t>{3, 0x10}, {77, 0xabcdef}}) {
    auto r = decode_bind_qp(Reply{{set_answer(RDMA_NLDEV_CMD_STAT_SET, id, lqpn), ack_message()}});
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->counter_id, id);
    EXPECT_EQ(r->lqpn, lqpn);
  }
  auto no_id =
      decode_bind_qp(Reply{{set_answer(RDMA_NLDEV_CMD_STAT_SET, std::nullopt, 5U), ack_message()}});
  ASSERT_FALSE(no_id);
  EXPECT_NE(no_id.error().message.find("STAT_COUNTER_ID"), std::string::npos);
  auto no_qp =
      decode_bind_qp(Reply{{set_answer(RDMA_NLDEV_CMD_STAT_SET, 5U, std::nullopt), ack_message()}});
  ASSERT_FALSE(no_qp);
  EXPECT_NE(no_qp.error().message.find("RES_LQPN"), std::string::npos);
  auto wrong_type =
      decode_bind_qp(Reply{{set_answer(RDMA_NLDEV_CMD_STAT_GET, 5U, 6U), ack_message()}});
  ASSERT_FALSE(wrong_type);
  EXPECT_NE(wrong_type.error().message.find("unexpected message type"), std::string::npos);
}

TEST(CounterCodec, UnbindIsAnsweredWithAStatSetMessage) {
  EXPECT_TRUE(
      decode_unbind_qp(Reply{{set_answer(RDMA_NLDEV_CMD_STAT_SET, 3U, 42U), ack_message()}}));
  Status as_del =
      decode_unbind_qp(Reply{{set_answer(RDMA_NLDEV_CMD_STAT_DEL, 3U, 42U), ack_message()}});
  ASSERT_FALSE(as_del);
  EXPECT_NE(as_del.error().message.find("unexpected message type"), std::string::npos);
}

// --- QPs -------------------------------------------------------------------------

struct QpSpec {
  std::optional<uint32_t> port;
  uint32_t lqpn = 0;
  uint8_t type = kRc;
  uint8_t state = 3;
  std::optional<uint32_t> pid;
  std::optional<std::string> kern_name;
};

// A QP dump message with the entries fill_res_qp_entry() makes: besides
// what the codec reads, the remote QP number and PSNs (connected QPs), the
// path migration state and the PD number (user QPs), each with a value no
// other attribute of the entry has.
Bytes qps_msg(const std::vector<QpSpec>& qps, uint32_t dev = 1,
              const std::string& name = "mlx5_0") {
  NlMessage m(nldev_type(RDMA_NLDEV_CMD_RES_QP_GET), NLM_F_MULTI);
  m.u32(RDMA_NLDEV_ATTR_DEV_INDEX, dev).str(RDMA_NLDEV_ATTR_DEV_NAME, name);
  m.begin_nest(RDMA_NLDEV_ATTR_RES_QP);
  for (const auto& q : qps) {
    const bool connected = q.type == IB_UVERBS_QPT_RC || q.type == IB_UVERBS_QPT_UC;
    const bool migrates =
        connected || q.type == IB_UVERBS_QPT_XRC_INI || q.type == IB_UVERBS_QPT_XRC_TGT;
    m.begin_nest(RDMA_NLDEV_ATTR_RES_QP_ENTRY);
    if (q.port) m.u32(RDMA_NLDEV_ATTR_PORT_INDEX, *q.port);
    m.u32(RDMA_NLDEV_ATTR_RES_LQPN, q.lqpn);
    if (q.pid) m.u32(RDMA_NLDEV_ATTR_RES_PDN, q.lqpn + 0x40000);
    if (connected) {
      m.u32(RDMA_NLDEV_ATTR_RES_RQPN, q.lqpn + 0x10000)
          .u32(RDMA_NLDEV_ATTR_RES_RQ_PSN, q.lqpn + 0x20000);
    }
    m.u32(RDMA_NLDEV_ATTR_RES_SQ_PSN, q.lqpn + 0x30000);
    if (migrates) m.u8(RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE, 0);  // IB_MIG_MIGRATED
    m.u8(RDMA_NLDEV_ATTR_RES_TYPE, q.type).u8(RDMA_NLDEV_ATTR_RES_STATE, q.state);
    if (q.pid) m.u32(RDMA_NLDEV_ATTR_RES_PID, *q.pid);
    if (q.kern_name) m.str(RDMA_NLDEV_ATTR_RES_KERN_NAME, *q.kern_name);
    m.end_nest();
  }
  m.end_nest();
  return m.bytes();
}

TEST(CounterCodec, QpsAcrossMessagesWithOwnersAndPorts) {
  const std::vector<QpSpec> first = {
      {.port = 2, .lqpn = 1, .type = 1, .state = 3, .kern_name = "ib_core"},
      {.port = 1, .lqpn = 0x120, .type = kRc, .state = 3, .pid = 900},
  };
  const std::vector<QpSpec> second = {
      {.port = std::nullopt, .lqpn = 0x121, .type = kUd, .state = 0, .pid = 901},
      {.port = 2, .lqpn = 0x122, .type = IB_UVERBS_QPT_XRC_TGT, .state = 6, .pid = 900},
  };
  auto r = decode_qps(dump_reply({qps_msg(first, 4, "mlx5_3"), qps_msg(second, 4, "mlx5_3")}));
  ASSERT_TRUE(r) << r.error().message;
  std::vector<QpSpec> all = first;
  all.insert(all.end(), second.begin(), second.end());
  ASSERT_EQ(r->size(), all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Qp& q = (*r)[i];
    EXPECT_EQ(q.dev_index, 4U);
    EXPECT_EQ(q.dev_name, "mlx5_3");
    EXPECT_EQ(q.port, all[i].port);
    EXPECT_EQ(q.lqpn, all[i].lqpn);
    EXPECT_EQ(q.type, all[i].type);
    EXPECT_EQ(q.state, all[i].state);
    EXPECT_EQ(q.pid, all[i].pid);
    EXPECT_EQ(q.kern_name, all[i].kern_name);
  }
}

TEST(CounterCodec, QpEntryWithoutItsNumberTypeOrStateIsAnError) {
  for (auto [attr, name] : {std::pair<uint16_t, const char*>{RDMA_NLDEV_ATTR_RES_LQPN, "RES_LQPN"},
                            {RDMA_NLDEV_ATTR_RES_TYPE, "RES_TYPE"},
                            {RDMA_NLDEV_ATTR_RES_STATE, "RES_STATE"}}) {
    NlMessage m(nldev_type(RDMA_NLDEV_CMD_RES_QP_GET), NLM_F_MULTI);
    m.u32(RDMA_NLDEV_ATTR_DEV_INDEX, 1).str(RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0");
    m.begin_nest(RDMA_NLDEV_ATTR_RES_QP).begin_nest(RDMA_NLDEV_ATTR_RES_QP_ENTRY);
    m.u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1);
    if (attr != RDMA_NLDEV_ATTR_RES_LQPN) m.u32(RDMA_NLDEV_ATTR_RES_LQPN, 9);
    if (attr != RDMA_NLDEV_ATTR_RES_TYPE) m.u8(RDMA_NLDEV_ATTR_RES_TYPE, kRc);
    if (attr != RDMA_NLDEV_ATTR_RES_STATE) m.u8(RDMA_NLDEV_ATTR_RES_STATE, 3);
    m.end_nest().end_nest();
    auto r = decode_qps(dump_reply({m.bytes()}));
    ASSERT_FALSE(r) << name;
    EXPECT_NE(r.error().message.find(name), std::string::npos) << r.error().message;
  }
}

TEST(CounterCodec, EveryTruncationOfAQpDumpIsAnError) {
  const Bytes good =
      datagram({qps_msg({{.port = 1, .lqpn = 7, .pid = 3}, {.lqpn = 8, .kern_name = "rdma_cm"}}),
                done_message()});
  ASSERT_TRUE(decode_qps(Reply{{good}}));
  for (std::size_t n = 0; n < good.size(); ++n) {
    Bytes cut(good.begin(), good.begin() + static_cast<long>(n));
    EXPECT_FALSE(decode_qps(Reply{{cut}})) << "prefix " << n;
  }
}

// --- names ---------------------------------------------------------------------

TEST(CounterCodec, QpTypeNamesFollowTheKernelEnum) {
  const std::vector<std::pair<uint8_t, std::string>> uapi = {
      {IB_UVERBS_QPT_RC, "RC"},           {IB_UVERBS_QPT_UC, "UC"},
      {IB_UVERBS_QPT_UD, "UD"},           {IB_UVERBS_QPT_RAW_PACKET, "RAW_PACKET"},
      {IB_UVERBS_QPT_XRC_INI, "XRC_INI"}, {IB_UVERBS_QPT_XRC_TGT, "XRC_TGT"},
      {IB_UVERBS_QPT_DRIVER, "DRIVER"},
  };
  for (const auto& [type, name] : uapi) {
    EXPECT_EQ(qp_type_name(type), name);
    EXPECT_EQ(qp_type_from_name(name), type) << name;
  }
  // The special QPs 0 and 1 precede RC.
  EXPECT_EQ(qp_type_name(IB_UVERBS_QPT_RC - 2), "SMI");
  EXPECT_EQ(qp_type_name(IB_UVERBS_QPT_RC - 1), "GSI");

  // Every value with a name maps back to itself; names are distinct.
  std::set<std::string> seen;
  for (unsigned t = 0; t <= 0xff; ++t) {
    const std::string name = qp_type_name(static_cast<uint8_t>(t));
    if (name == "UNKNOWN") continue;
    EXPECT_TRUE(seen.insert(name).second) << name;
    EXPECT_EQ(qp_type_from_name(name), static_cast<uint8_t>(t)) << name;
  }
  EXPECT_EQ(qp_type_name(7), "UNKNOWN");  // unused in the kernel enum
  EXPECT_EQ(qp_type_from_name("UNKNOWN"), std::nullopt);
  EXPECT_EQ(qp_type_from_name("RCX"), std::nullopt);
  EXPECT_EQ(qp_type_from_name(""), std::nullopt);
}

TEST(CounterCodec, QpStateNamesFollowTheKernelEnum) {
  const std::vector<std::string> kernel_order = {"RESET", "INIT", "RTR", "RTS",
                                                 "SQD",   "SQE",  "ERR"};
  for (std::size_t s = 0; s < kernel_order.size(); ++s) {
    EXPECT_EQ(qp_state_name(static_cast<uint8_t>(s)), kernel_order[s]);
  }
  for (unsigned s = static_cast<unsigned>(kernel_order.size()); s <= 0xff; ++s) {
    EXPECT_EQ(qp_state_name(static_cast<uint8_t>(s)), "UNKNOWN") << s;
  }
}

// --- requests ------------------------------------------------------------------

TEST(CounterCodec, CounterReadRequestsCarryWhatTheKernelNeeds) {
  const Bytes mode = build_counter_mode_get(7, 2);
  EXPECT_EQ(header(mode).nlmsg_type, nldev_type(RDMA_NLDEV_CMD_STAT_GET));
  EXPECT_EQ(header(mode).nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
  EXPECT_EQ(header(mode).nlmsg_len, mode.size());
  auto a = u32_attrs(mode);
  EXPECT_EQ(a[RDMA_NLDEV_ATTR_DEV_INDEX], 7U);
  EXPECT_EQ(a[RDMA_NLDEV_ATTR_PORT_INDEX], 2U);
  EXPECT_EQ(a[RDMA_NLDEV_ATTR_STAT_RES], static_cast<uint32_t>(RDMA_NLDEV_ATTR_RES_QP));
  EXPECT_EQ(a.count(RDMA_NLDEV_ATTR_STAT_MODE), 1U);  // any value asks for the mode

  const Bytes sets = build_counter_sets_dump(9);
  EXPECT_EQ(header(sets).nlmsg_type, nldev_type(RDMA_NLDEV_CMD_STAT_GET));
  EXPECT_EQ(header(sets).nlmsg_flags, NLM_F_REQUEST | NLM_F_DUMP);
  a = u32_attrs(sets);
  EXPECT_EQ(a[RDMA_NLDEV_ATTR_DEV_INDEX], 9U);
  EXPECT_EQ(a[RDMA_NLDEV_ATTR_STAT_RES], static_cast<uint32_t>(RDMA_NLDEV_ATTR_RES_QP));

  const Bytes qps = build_qp_dump(4);
  EXPECT_EQ(header(qps).nlmsg_type, nldev_type(RDMA_NLDEV_CMD_RES_QP_GET));
  EXPECT_EQ(header(qps).nlmsg_flags, NLM_F_REQUEST | NLM_F_DUMP);
  a = u32_attrs(qps);
  EXPECT_EQ(a[RDMA_NLDEV_ATTR_DEV_INDEX], 4U);
}

TEST(CounterCodec, CounterWriteRequestsCarryWhatTheKernelNeeds) {
  for (uint32_t mask : {0U, 1U, 2U, 3U}) {
    const Bytes req = build_set_auto_mode(3, 1, mask);
    EXPECT_EQ(header(req).nlmsg_type, nldev_type(RDMA_NLDEV_CMD_STAT_SET));
    EXPECT_EQ(header(req).nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
    auto a = u32_attrs(req);
    EXPECT_EQ(a[RDMA_NLDEV_ATTR_DEV_INDEX], 3U);
    EXPECT_EQ(a[RDMA_NLDEV_ATTR_PORT_INDEX], 1U);
    EXPECT_EQ(a[RDMA_NLDEV_ATTR_STAT_RES], static_cast<uint32_t>(RDMA_NLDEV_ATTR_RES_QP));
    EXPECT_EQ(a[RDMA_NLDEV_ATTR_STAT_MODE], static_cast<uint32_t>(RDMA_COUNTER_MODE_AUTO));
    ASSERT_EQ(a.count(RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK), 1U);
    EXPECT_EQ(a[RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK], mask);
  }

  for (std::optional<uint32_t> id : {std::optional<uint32_t>{}, std::optional<uint32_t>{12}}) {
    const Bytes req = build_bind_qp(3, 2, 0x5a5, id);
    EXPECT_EQ(header(req).nlmsg_type, nldev_type(RDMA_NLDEV_CMD_STAT_SET));
    EXPECT_EQ(header(req).nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
    auto a = u32_attrs(req);
    EXPECT_EQ(a[RDMA_NLDEV_ATTR_DEV_INDEX], 3U);
    EXPECT_EQ(a[RDMA_NLDEV_ATTR_PORT_INDEX], 2U);
    EXPECT_EQ(a[RDMA_NLDEV_ATTR_STAT_RES], static_cast<uint32_t>(RDMA_NLDEV_ATTR_RES_QP));
    EXPECT_EQ(a[RDMA_NLDEV_ATTR_STAT_MODE], static_cast<uint32_t>(RDMA_COUNTER_MODE_MANUAL));
    EXPECT_EQ(a[RDMA_NLDEV_ATTR_RES_LQPN], 0x5a5U);
    EXPECT_EQ(a.count(RDMA_NLDEV_ATTR_STAT_COUNTER_ID), id ? 1U : 0U);
    if (id) {
      EXPECT_EQ(a[RDMA_NLDEV_ATTR_STAT_COUNTER_ID], *id);
    }
  }

  const Bytes del = build_unbind_qp(3, 2, 12, 0x5a5);
  EXPECT_EQ(header(del).nlmsg_type, nldev_type(RDMA_NLDEV_CMD_STAT_DEL));
  EXPECT_EQ(header(del).nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
  EXPECT_EQ(header(del).nlmsg_len, del.size());
  auto a = u32_attrs(del);
  EXPECT_EQ(a[RDMA_NLDEV_ATTR_DEV_INDEX], 3U);
  EXPECT_EQ(a[RDMA_NLDEV_ATTR_PORT_INDEX], 2U);
  EXPECT_EQ(a[RDMA_NLDEV_ATTR_STAT_RES], static_cast<uint32_t>(RDMA_NLDEV_ATTR_RES_QP));
  EXPECT_EQ(a[RDMA_NLDEV_ATTR_STAT_COUNTER_ID], 12U);
  EXPECT_EQ(a[RDMA_NLDEV_ATTR_RES_LQPN], 0x5a5U);
}

}  // namespace
}  // namespace rdma_exporter::nldev
