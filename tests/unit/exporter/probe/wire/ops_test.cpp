#include "exporter/probe/wire/ops.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace rdma_exporter::probe {
namespace {

TEST(ProbeWireOps, EachOpIsOneRowWithWhatItsMechanismsRead) {
  struct Want {
    const char* name;
    int number;  // in a set-up message
    Transport transport;
    ibv_wr_opcode opcode;
    bool remote_memory;
    bool inline_data;
    bool echo;
    uint32_t prober_recv;
    uint32_t responder_recv;
  };
  const std::vector<Want> table = {
      {"send", 1, Transport::rc, IBV_WR_SEND, false, true, true, 2, 16},
      {"write", 2, Transport::rc, IBV_WR_RDMA_WRITE, true, true, false, 0, 0},
      {"read", 3, Transport::rc, IBV_WR_RDMA_READ, true, false, false, 0, 0},
      {"ud", 4, Transport::ud, IBV_WR_SEND, false, true, true, 0, 0},
  };
  ASSERT_EQ(kOps.size(), table.size());
  for (const Want& w : table) {
    SCOPED_TRACE(w.name);
    const OpRow* by_name = find_op(w.name);
    ASSERT_NE(by_name, nullptr);
    EXPECT_EQ(find_op(static_cast<Op>(w.number)), by_name);
    EXPECT_EQ(static_cast<int>(by_name->op), w.number);
    EXPECT_STREQ(op_name(by_name->op), w.name);
    EXPECT_EQ(by_name->transport, w.transport);
    EXPECT_EQ(is_ud(by_name->op), w.transport == Transport::ud);
    EXPECT_EQ(by_name->opcode, w.opcode);
    EXPECT_EQ(by_name->remote_memory, w.remote_memory);
    EXPECT_EQ(by_name->inline_data, w.inline_data);
    EXPECT_EQ(by_name->echo, w.echo);
    EXPECT_EQ(by_name->prober_recv_depth, w.prober_recv);
    EXPECT_EQ(by_name->responder_recv_depth, w.responder_recv);
  }
}

TEST(ProbeWireOps, NumbersAndNamesNoRowHasAreUnknown) {
  for (int number : {0, 5, 255}) {
    EXPECT_EQ(find_op(static_cast<Op>(number)), nullptr) << number;
    EXPECT_STREQ(op_name(static_cast<Op>(number)), "unknown");
    EXPECT_FALSE(is_ud(static_cast<Op>(number)));
  }
  for (const char* name : {"", "Send", "writ", "rdma_write", "ud "}) {
    EXPECT_EQ(find_op(name), nullptr) << name;
  }
  EXPECT_EQ(op_names(), "send, write, read, ud");
}

}  // namespace
}  // namespace rdma_exporter::probe
