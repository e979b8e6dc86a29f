// The nldev codecs, fed kernel-shaped messages built with libmnl.

#include "common/kernel/nldev/codec.hpp"

#include <gtest/gtest.h>
#include <rdma/rdma_netlink.h>

#include <climits>
#include <cstddef>
#include <cstring>

#include "common/kernel/nldev/client.hpp"
#include "tests/fake_kernel/fake_nldev.hpp"
#include "tests/fake_kernel/nl_message.hpp"

namespace rdma_exporter::nldev {
namespace {

using testing::ack_message;
using testing::datagram;
using testing::done_message;
using testing::error_message;
using testing::nldev_type;
using testing::NlMessage;

// A device as the kernel's fill_dev_info() sends it. The fields' values
// differ from each other (the port count from every index used with it).
Bytes device_msg(uint32_t index, const std::string& name, uint32_t ports = 2) {
  return NlMessage(nldev_type(RDMA_NLDEV_CMD_GET), NLM_F_MULTI)
      .u32(RDMA_NLDEV_ATTR_DEV_INDEX, index)
      .str(RDMA_NLDEV_ATTR_DEV_NAME, name)
      .u32(RDMA_NLDEV_ATTR_PORT_INDEX, ports)
      .str(RDMA_NLDEV_ATTR_FW_VERSION, "16.35.2000")
      .u64(RDMA_NLDEV_ATTR_NODE_GUID, 0x98039b0300345a1eULL)
      .u64(RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, 0x98039b0300345a1fULL)
      .u8(RDMA_NLDEV_ATTR_DEV_NODE_TYPE, 1)
      .str(RDMA_NLDEV_ATTR_DEV_PROTOCOL, "ib")
      .bytes();
}

Bytes counters_msg(std::initializer_list<std::pair<const char*, uint64_t>> counters) {
  NlMessage m(nldev_type(RDMA_NLDEV_CMD_STAT_GET));
  m.u32(RDMA_NLDEV_ATTR_DEV_INDEX, 3).u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1);
  m.begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
  for (const auto& [name, value] : counters) {
    m.begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)
        .str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, name)
        .u64(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, value)
        .end_nest();
  }
  m.end_nest();
  return m.bytes();
}

TEST(Codec, DecodesMultiPartDeviceDump) {
  Reply r{{datagram({device_msg(3, "mlx5_0", 2), device_msg(5, "mlx5_1", 4)}),
           datagram({device_msg(7, "rxe0")}), datagram({done_message()})}};
  auto devices = decode_devices(r);
  ASSERT_TRUE(devices) << devices.error().message;
  ASSERT_EQ(devices->size(), 3U);
  const Device& d = devices->front();
  EXPECT_EQ(d.index, 3U);
  EXPECT_EQ(d.name, "mlx5_0");
  EXPECT_EQ(d.port_count, 2U);
  EXPECT_EQ(d.fw_version, "16.35.2000");
  EXPECT_EQ(format_guid(*d.node_guid), "9803:9b03:0034:5a1e");
  EXPECT_EQ(format_guid(*d.sys_image_guid), "9803:9b03:0034:5a1f");
  EXPECT_EQ(d.node_type, 1);
  EXPECT_EQ(d.protocol, "ib");
  EXPECT_EQ((*devices)[1].index, 5U);
  EXPECT_EQ((*devices)[1].port_count, 4U);
  EXPECT_EQ((*devices)[2].name, "rxe0");
  EXPECT_EQ((*devices)[2].index, 7U);
}

TEST(Codec, EmptyDumpIsAnEmptyList) {
  auto devices = decode_devices(Reply{{done_message()}});
  ASSERT_TRUE(devices);
  EXPECT_TRUE(devices->empty());
}

TEST(Codec, KernelErrorCarriesErrnoAndExtendedAck) {
  const Bytes request = build_port_counters_get(3, 9);
  Reply r{{error_message(-EINVAL, "Invalid port index", 5, request)}};
  auto c = decode_port_counters(r);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, EINVAL);
  EXPECT_NE(c.error().message.find("RDMA_NLDEV_CMD_STAT_GET"), std::string::npos);
  EXPECT_NE(c.error().message.find("Invalid argument"), std::string::npos);
  EXPECT_NE(c.error().message.find("Invalid port index"), std::string::npos);
}

TEST(Codec, UncappedErrorSkipsTheEchoedRequestToFindTheExtendedAck) {
  const Bytes request = build_port_counters_get(3, 9);
  Reply r{{error_message(-EPERM, "Operation needs CAP_NET_ADMIN", 5, request, /*capped=*/false)}};
  auto c = decode_port_counters(r);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, EPERM);
  EXPECT_NE(c.error().message.find("Operation needs CAP_NET_ADMIN"), std::string::npos);
}

TEST(Codec, ErrorInDoneEndsTheDumpWithThatError) {
  auto devices = decode_devices(Reply{{datagram({device_msg(3, "a"), done_message(-ENOMEM)})}});
  ASSERT_FALSE(devices);
  EXPECT_EQ(devices.error().code, ENOMEM);
}

TEST(Codec, InterruptedDumpAsksForARetry) {
  Bytes msg = device_msg(3, "mlx5_0");
  reinterpret_cast<nlmsghdr*>(msg.data())->nlmsg_flags |= NLM_F_DUMP_INTR;
  auto devices = decode_devices(Reply{{datagram({msg, done_message()})}});
  ASSERT_FALSE(devices);
  EXPECT_EQ(devices.error().code, netlink::kDumpInterrupted);
}

TEST(Codec, ClientRetriesInterruptedDumpsAndGivesUpAfterThree) {
  testing::FakeNldev kernel;
  kernel.devices.push_back({.index = 1, .name = "mlx5_0"});
  Client client(kernel);
  kernel.interrupt_next_dumps = 2;
  auto ok = client.devices();
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->size(), 1U);
  EXPECT_EQ(kernel.requests.size(), 3U);

  kernel.requests.clear();
  kernel.interrupt_next_dumps = 5;
  auto failed = client.devices();
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, netlink::kDumpInterrupted);
  EXPECT_EQ(kernel.requests.size(), 3U);
}

TEST(Codec, TruncatedDatagramIsAnErrorNotAShortList) {
  Bytes dgram = datagram({device_msg(3, "mlx5_0"), device_msg(5, "mlx5_1")});
  dgram.resize(dgram.size() - 9);  // the second message loses its tail
  auto devices = decode_devices(Reply{{dgram, done_message()}});
  ASSERT_FALSE(devices);
  EXPECT_NE(devices.error().message.find("truncated"), std::string::npos);
}

TEST(Codec, TruncatedAttributeInsideAMessageIsAnError) {
  Bytes msg = device_msg(3, "mlx5_0");
  // Claim the last attribute is longer than the message holds.
  auto* nlh = reinterpret_cast<nlmsghdr*>(msg.data());
  nlh->nlmsg_len -= 2;
  msg.resize(nlh->nlmsg_len);
  auto devices = decode_devices(Reply{{datagram({msg}), done_message()}});
  ASSERT_FALSE(devices);
  EXPECT_NE(devices.error().message.find("truncated"), std::string::npos);
}

TEST(Codec, ReplyWithoutItsEndIsAnError) {
  auto devices = decode_devices(Reply{{datagram({device_msg(3, "mlx5_0")})}});
  ASSERT_FALSE(devices);
  EXPECT_NE(devices.error().message.find("ended before"), std::string::npos);
  auto counters = decode_port_counters(Reply{{counters_msg({{"a", 1}})}});
  ASSERT_FALSE(counters);
}

TEST(Codec, UnknownAttributesAreIgnoredAtTopAndInNests) {
  NlMessage m(nldev_type(RDMA_NLDEV_CMD_STAT_GET));
  m.u32(RDMA_NLDEV_ATTR_DEV_INDEX, 3).u32(900, 42).u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1);
  m.begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
  m.u32(777, 1);  // unknown entry kind inside the table
  m.begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)
      .u64(600, 5)
      .str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, "rx_write_requests")
      .u64(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, 18446744073709551615ULL)
      .end_nest();
  m.end_nest();
  auto c = decode_port_counters(Reply{{m.bytes(), ack_message()}});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->dev_index, 3U);
  EXPECT_EQ(c->port, 1U);
  ASSERT_EQ(c->counters.size(), 1U);
  EXPECT_EQ(c->counters[0].name, "rx_write_requests");
  EXPECT_EQ(c->counters[0].value, 18446744073709551615ULL);
}

TEST(Codec, MissingRequiredAttributeIsNamed) {
  Bytes msg = NlMessage(nldev_type(RDMA_NLDEV_CMD_GET), NLM_F_MULTI)
                  .u32(RDMA_NLDEV_ATTR_DEV_INDEX, 1)
                  .bytes();
  auto devices = decode_devices(Reply{{datagram({msg, done_message()})}});
  ASSERT_FALSE(devices);
  EXPECT_NE(devices.error().message.find("DEV_NAME"), std::string::npos);
}

TEST(Codec, MissingCounterTableOrEntryValueIsNamed) {
  Bytes no_table = NlMessage(nldev_type(RDMA_NLDEV_CMD_STAT_GET))
                       .u32(RDMA_NLDEV_ATTR_DEV_INDEX, 3)
                       .u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1)
                       .bytes();
  auto c = decode_port_counters(Reply{{no_table, ack_message()}});
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("STAT_HWCOUNTERS"), std::string::npos);

  NlMessage m(nldev_type(RDMA_NLDEV_CMD_STAT_GET));
  m.u32(RDMA_NLDEV_ATTR_DEV_INDEX, 3).u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1);
  m.begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS)
      .begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)
      .str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, "x")
      .end_nest()
      .end_nest();
  c = decode_port_counters(Reply{{m.bytes(), ack_message()}});
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("STAT_HWCOUNTER_ENTRY_VALUE"), std::string::npos);
}

TEST(Codec, AttributeOfTheWrongSizeIsAnError) {
  Bytes msg = NlMessage(nldev_type(RDMA_NLDEV_CMD_GET), NLM_F_MULTI)
                  .u8(RDMA_NLDEV_ATTR_DEV_INDEX, 1)
                  .str(RDMA_NLDEV_ATTR_DEV_NAME, "x")
                  .bytes();
  auto devices = decode_devices(Reply{{datagram({msg, done_message()})}});
  ASSERT_FALSE(devices);
  EXPECT_NE(devices.error().message.find("DEV_INDEX"), std::string::npos);

  const char unterminated[3] = {'a', 'b', 'c'};
  msg = NlMessage(nldev_type(RDMA_NLDEV_CMD_GET), NLM_F_MULTI)
            .u32(RDMA_NLDEV_ATTR_DEV_INDEX, 1)
            .raw(RDMA_NLDEV_ATTR_DEV_NAME, unterminated, sizeof unterminated)
            .bytes();
  devices = decode_devices(Reply{{datagram({msg, done_message()})}});
  ASSERT_FALSE(devices);
  EXPECT_NE(devices.error().message.find("DEV_NAME"), std::string::npos);
}

TEST(Codec, UnexpectedMessageTypeIsAnError) {
  Bytes port = NlMessage(nldev_type(RDMA_NLDEV_CMD_PORT_GET), NLM_F_MULTI)
                   .u32(RDMA_NLDEV_ATTR_DEV_INDEX, 1)
                   .bytes();
  auto devices = decode_devices(Reply{{datagram({port, done_message()})}});
  ASSERT_FALSE(devices);
  EXPECT_NE(devices.error().message.find("unexpected message type"), std::string::npos);
}

// The message type is compared whole: a device message whose type is wrong
// in any one of its bytes is refused, not decoded as a device.
TEST(Codec, AMessageTypeWrongInAnyOfItsBytesIsRefused) {
  const Bytes good = device_msg(3, "mlx5_0");
  ASSERT_TRUE(decode_devices(Reply{{datagram({good, done_message()})}}));
  for (std::size_t byte = 0; byte < sizeof(nlmsghdr::nlmsg_type); ++byte) {
    Bytes bad = good;
    bad[offsetof(nlmsghdr, nlmsg_type) + byte] ^= 0x80;  // never a control type (< 0x10)
    auto devices = decode_devices(Reply{{datagram({bad, done_message()})}});
    ASSERT_FALSE(devices) << "byte " << byte;
    EXPECT_NE(devices.error().message.find("unexpected message type"), std::string::npos)
        << "byte " << byte << ": " << devices.error().message;
  }
}

// An NLMSG_ERROR whose payload is shorter than struct nlmsgerr, by any
// number of bytes down to none, is malformed: its error code is not read.
TEST(Codec, AnErrorMessageShorterThanItsHeaderIsMalformed) {
  const Bytes whole = error_message(-EPERM);
  ASSERT_EQ(whole.size(), sizeof(nlmsghdr) + sizeof(nlmsgerr));
  EXPECT_EQ(decode_devices(Reply{{whole}}).error().code, EPERM);
  for (std::size_t payload = 0; payload < sizeof(nlmsgerr); ++payload) {
    Bytes cut(whole.begin(), whole.begin() + static_cast<long>(sizeof(nlmsghdr) + payload));
    reinterpret_cast<nlmsghdr*>(cut.data())->nlmsg_len = static_cast<uint32_t>(cut.size());
    auto devices = decode_devices(Reply{{cut}});
    ASSERT_FALSE(devices) << payload;
    EXPECT_EQ(devices.error().code, EBADMSG) << payload;
    EXPECT_EQ(devices.error().message, "malformed netlink reply: truncated NLMSG_ERROR") << payload;
  }
}

// A RoCE port as fill_port_info() sends it: no LID, a netdev. Every value
// differs from the others, so a field read from another attribute than its
// own comes out wrong (or missing).
TEST(Codec, PortsAndResourceSummaries) {
  Bytes port = NlMessage(nldev_type(RDMA_NLDEV_CMD_PORT_GET), NLM_F_MULTI)
                   .u32(RDMA_NLDEV_ATTR_DEV_INDEX, 6)
                   .str(RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0")
                   .u32(RDMA_NLDEV_ATTR_PORT_INDEX, 2)
                   .u8(RDMA_NLDEV_ATTR_PORT_STATE, 4)
                   .u8(RDMA_NLDEV_ATTR_PORT_PHYS_STATE, 5)
                   .u32(RDMA_NLDEV_ATTR_NDEV_INDEX, 9)
                   .str(RDMA_NLDEV_ATTR_NDEV_NAME, "ens1f0np0")
                   .bytes();
  auto ports = decode_ports(Reply{{datagram({port, done_message()})}});
  ASSERT_TRUE(ports) << ports.error().message;
  ASSERT_EQ(ports->size(), 1U);
  const Port& p = ports->front();
  EXPECT_EQ(p.dev_index, 6U);
  EXPECT_EQ(p.dev_name, "mlx5_0");
  EXPECT_EQ(p.index, 2U);
  EXPECT_EQ(p.state, std::optional<uint8_t>(4));
  EXPECT_EQ(p.phys_state, std::optional<uint8_t>(5));
  EXPECT_EQ(p.netdev_index, std::optional<uint32_t>(9));
  EXPECT_EQ(p.netdev_name, "ens1f0np0");
  EXPECT_FALSE(p.lid);  // RoCE: no InfiniBand addressing
  EXPECT_FALSE(p.sm_lid);
  EXPECT_FALSE(p.lmc);

  NlMessage res(nldev_type(RDMA_NLDEV_CMD_RES_GET), NLM_F_MULTI);
  res.u32(RDMA_NLDEV_ATTR_DEV_INDEX, 7).str(RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_3");
  res.begin_nest(RDMA_NLDEV_ATTR_RES_SUMMARY);
  const std::vector<std::pair<std::string, uint64_t>> entries = {
      {"qp", 12}, {"cq", 34}, {"mr", 56}};
  for (const auto& [n, v] : entries) {
    res.begin_nest(RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY)
        .str(RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME, n)
        .u64(RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR, v)
        .end_nest();
  }
  res.end_nest();
  auto sums = decode_resource_summaries(Reply{{datagram({res.bytes(), done_message()})}});
  ASSERT_TRUE(sums) << sums.error().message;
  ASSERT_EQ(sums->size(), 1U);
  EXPECT_EQ((*sums)[0].dev_index, 7U);
  EXPECT_EQ((*sums)[0].dev_name, "mlx5_3");
  EXPECT_EQ((*sums)[0].entries, entries);
}

// An InfiniBand port as fill_port_info() sends it, every attribute with a
// value of its own: LID, SM_LID and LMC, the port state and the physical
// state, and the capability flags and subnet prefix the codec does not read.
TEST(Codec, PortIdentifiersComeFromTheirOwnAttributes) {
  Bytes port = NlMessage(nldev_type(RDMA_NLDEV_CMD_PORT_GET), NLM_F_MULTI)
                   .u32(RDMA_NLDEV_ATTR_DEV_INDEX, 8)
                   .str(RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_1")
                   .u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1)
                   .u64(RDMA_NLDEV_ATTR_CAP_FLAGS, 0x2651e84aULL)
                   .u64(RDMA_NLDEV_ATTR_SUBNET_PREFIX, 0xfe80000000000000ULL)
                   .u32(RDMA_NLDEV_ATTR_LID, 7)
                   .u32(RDMA_NLDEV_ATTR_SM_LID, 3)
                   .u8(RDMA_NLDEV_ATTR_LMC, 2)
                   .u8(RDMA_NLDEV_ATTR_PORT_STATE, 4)
                   .u8(RDMA_NLDEV_ATTR_PORT_PHYS_STATE, 5)
                   .bytes();
  auto ports = decode_ports(Reply{{datagram({port, done_message()})}});
  ASSERT_TRUE(ports) << ports.error().message;
  ASSERT_EQ(ports->size(), 1U);
  const Port& p = ports->front();
  EXPECT_EQ(p.dev_index, 8U);
  EXPECT_EQ(p.dev_name, "mlx5_1");
  EXPECT_EQ(p.index, 1U);
  EXPECT_EQ(p.lid, std::optional<uint32_t>(7));
  EXPECT_EQ(p.sm_lid, std::optional<uint32_t>(3));
  EXPECT_EQ(p.lmc, std::optional<uint8_t>(2));
  EXPECT_EQ(p.state, std::optional<uint8_t>(4));
  EXPECT_EQ(p.phys_state, std::optional<uint8_t>(5));
  EXPECT_FALSE(p.netdev_index);  // an InfiniBand port has no netdev
  EXPECT_FALSE(p.netdev_name);
}

// A device as fill_dev_info() sends it, every attribute (the ones the codec
// does not read too) with a value of its own.
TEST(Codec, EveryDeviceFieldComesFromItsOwnAttribute) {
  Bytes msg = NlMessage(nldev_type(RDMA_NLDEV_CMD_GET), NLM_F_MULTI)
                  .u32(RDMA_NLDEV_ATTR_DEV_INDEX, 9)
                  .str(RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_4")
                  .u32(RDMA_NLDEV_ATTR_PORT_INDEX, 2)
                  .u64(RDMA_NLDEV_ATTR_CAP_FLAGS, 0x1c2d3e4fULL)
                  .str(RDMA_NLDEV_ATTR_FW_VERSION, "28.39.1002")
                  .u64(RDMA_NLDEV_ATTR_NODE_GUID, 0x0c42a10300b1c2d3ULL)
                  .u64(RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, 0x0c42a10300b1c2e4ULL)
                  .u8(RDMA_NLDEV_ATTR_DEV_NODE_TYPE, 4)
                  .u8(RDMA_NLDEV_ATTR_DEV_DIM, 1)
                  .str(RDMA_NLDEV_ATTR_DEV_PROTOCOL, "roce")
                  .bytes();
  auto devices = decode_devices(Reply{{datagram({msg, done_message()})}});
  ASSERT_TRUE(devices) << devices.error().message;
  ASSERT_EQ(devices->size(), 1U);
  const Device& d = devices->front();
  EXPECT_EQ(d.index, 9U);
  EXPECT_EQ(d.name, "mlx5_4");
  EXPECT_EQ(d.port_count, 2U);
  EXPECT_EQ(d.fw_version, "28.39.1002");
  EXPECT_EQ(d.node_guid, std::optional<uint64_t>(0x0c42a10300b1c2d3ULL));
  EXPECT_EQ(d.sys_image_guid, std::optional<uint64_t>(0x0c42a10300b1c2e4ULL));
  EXPECT_EQ(d.node_type, std::optional<uint8_t>(4));
  EXPECT_EQ(d.protocol, "roce");
}

TEST(Codec, PortCountersNeedTheirAnswer) {
  auto none = decode_port_counters(Reply{{ack_message()}});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, "malformed netlink reply: expected one STAT_GET message, got 0");
  auto two = decode_port_counters(
      Reply{{datagram({counters_msg({{"a", 1}}), counters_msg({{"a", 2}}), ack_message()})}});
  ASSERT_FALSE(two);
  EXPECT_NE(two.error().message.find("got 2"), std::string::npos);
}

// A bare netlink header claiming `length` bytes, in a 16-byte datagram.
Bytes header_only(uint32_t length, uint16_t type) {
  nlmsghdr h{};
  h.nlmsg_len = length;
  h.nlmsg_type = type;
  Bytes out(sizeof h);
  std::memcpy(out.data(), &h, sizeof h);
  return out;
}

// A length of 2^31 or more passes libmnl's int comparison: it must be seen
// as the truncated message it is, never read past the datagram.
TEST(Codec, MessageLengthsOfTwoToTheThirtyFirstAndMoreAreTruncation) {
  for (uint32_t length : {0xF0000000U, 0x80000010U, 0x80000000U, 0xFFFFFFFFU}) {
    for (uint16_t type :
         {nldev_type(RDMA_NLDEV_CMD_GET), uint16_t{NLMSG_DONE}, uint16_t{NLMSG_ERROR}}) {
      const Bytes d = header_only(length, type);
      EXPECT_FALSE(netlink::ends_exchange(d)) << length << " " << type;
      auto devices = decode_devices(Reply{{d}});
      ASSERT_FALSE(devices) << length << " " << type;
      EXPECT_EQ(devices.error().message,
                "malformed netlink reply: truncated netlink message (16 stray bytes in a "
                "datagram)");
    }
  }
}

// An error code outside the errno range (INT_MIN would overflow when
// negated) is reported as EPROTO, from NLMSG_ERROR and NLMSG_DONE alike.
TEST(Codec, ErrorCodesOutsideTheErrnoRangeAreEproto) {
  for (int code : {INT_MIN, -4096, 5}) {
    auto from_error = decode_devices(Reply{{error_message(code)}});
    ASSERT_FALSE(from_error) << code;
    EXPECT_EQ(from_error.error().code, EPROTO) << code;
  }
  auto from_done = decode_devices(Reply{{datagram({device_msg(3, "a"), done_message(INT_MIN)})}});
  ASSERT_FALSE(from_done);
  EXPECT_EQ(from_done.error().code, EPROTO);
  // The largest errno the kernel has is passed on as it is.
  auto largest = decode_devices(Reply{{error_message(-4095)}});
  ASSERT_FALSE(largest);
  EXPECT_EQ(largest.error().code, 4095);
}

// Any errno in NLMSG_DONE ends the dump with that error, EPERM (1) too.
TEST(Codec, EveryErrnoInDoneIsTheDumpsError) {
  for (int err : {EPERM, ENOENT, EOPNOTSUPP}) {
    auto devices = decode_devices(Reply{{datagram({device_msg(3, "a"), done_message(-err)})}});
    ASSERT_FALSE(devices) << err;
    EXPECT_EQ(devices.error().code, err);
  }
}

TEST(Codec, RequestsAreWhatTheKernelExpects) {
  const Bytes req = build_port_counters_get(3, 2);
  const auto* nlh = reinterpret_cast<const nlmsghdr*>(req.data());
  EXPECT_EQ(nlh->nlmsg_type, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_STAT_GET));
  EXPECT_EQ(nlh->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
  EXPECT_EQ(nlh->nlmsg_len, req.size());
  uint32_t dev = 0;
  uint32_t port = 0;
  for (const nlattr* a : testing::attributes(nlh)) {
    if (mnl_attr_get_type(a) == RDMA_NLDEV_ATTR_DEV_INDEX) dev = mnl_attr_get_u32(a);
    if (mnl_attr_get_type(a) == RDMA_NLDEV_ATTR_PORT_INDEX) port = mnl_attr_get_u32(a);
  }
  EXPECT_EQ(dev, 3U);
  EXPECT_EQ(port, 2U);

  const Bytes dump = build_device_dump();
  nlh = reinterpret_cast<const nlmsghdr*>(dump.data());
  EXPECT_EQ(nlh->nlmsg_flags, NLM_F_REQUEST | NLM_F_DUMP);
  EXPECT_EQ(nlh->nlmsg_len, sizeof(nlmsghdr));
}

TEST(Codec, EndOfExchangeIsSeenInAnyPositionOfADatagram) {
  EXPECT_FALSE(netlink::ends_exchange(datagram({device_msg(3, "a")})));
  EXPECT_TRUE(netlink::ends_exchange(datagram({device_msg(3, "a"), done_message()})));
  EXPECT_TRUE(netlink::ends_exchange(ack_message()));
  EXPECT_FALSE(netlink::ends_exchange(Bytes{1, 2, 3}));
}

TEST(Codec, GarbageBytesNeverCrash) {
  // Every prefix and a few corruptions of a valid reply: a clear error or a
  // value, never a crash (this runs under ASan/UBSan in CI).
  const Bytes good = datagram({device_msg(3, "mlx5_0"), device_msg(5, "mlx5_1"), done_message()});
  for (std::size_t n = 0; n < good.size(); ++n) {
    Bytes cut(good.begin(), good.begin() + static_cast<long>(n));
    auto r = decode_devices(Reply{{cut}});
    EXPECT_FALSE(r) << "prefix " << n;
  }
  for (std::size_t i = 0; i < good.size(); ++i) {
    Bytes bad = good;
    bad[i] ^= 0xff;
    (void)decode_devices(Reply{{bad}});
  }
}

}  // namespace
}  // namespace rdma_exporter::nldev
