#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

// The probe's operations in one table: a new op is one row here (and its
// number in the control protocol, docs/probe.md).
namespace rdma_exporter::probe {

// send, write and read use RC queue pairs, one pair per session; ud sends a
// datagram from the port's one UD queue pair and times the responder's echo.
// The numbers are what a set-up message carries.
enum class Op : uint8_t { send = 1, write = 2, read = 3, ud = 4 };

enum class Transport : uint8_t { rc, ud };

struct OpRow {
  Op op;
  std::string_view name;  // probe.classes[].op, the op label
  Transport transport;
  ibv_wr_opcode opcode;  // the prober's work request
  // The request names the responder's buffer (its address and rkey): the
  // buffer is remotely accessible, in a protection domain of its own.
  bool remote_memory;
  bool inline_data;  // a small request may be posted inline (not for a read)
  bool echo;         // the responder answers each probe with a message
  // Receives an RC queue pair keeps posted at each end (UD ports keep
  // their own).
  uint32_t prober_recv_depth;
  uint32_t responder_recv_depth;
  // The responder's buffer registration and the remote operations its
  // queue pair accepts; the prober's are local writes only.
  int responder_memory_access;
  int responder_qp_access;
};

// clang-format off
inline constexpr std::array<OpRow, 4> kOps{{
  // op       name     transport       opcode             remote inline echo  recv: prober responder
  {Op::send,  "send",  Transport::rc, IBV_WR_SEND,       false, true,  true,  2, 16,
   IBV_ACCESS_LOCAL_WRITE, 0},
  {Op::write, "write", Transport::rc, IBV_WR_RDMA_WRITE, true,  true,  false, 0, 0,
   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_WRITE},
  {Op::read,  "read",  Transport::rc, IBV_WR_RDMA_READ,  true,  false, false, 0, 0,
   IBV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_READ},
  {Op::ud,    "ud",    Transport::ud, IBV_WR_SEND,       false, true,  true,  0, 0,
   IBV_ACCESS_LOCAL_WRITE, 0},
}};
// clang-format on

// The row of `op`; null for a number no row has.
constexpr const OpRow* find_op(Op op) {
  for (const OpRow& row : kOps) {
    if (row.op == op) return &row;
  }
  return nullptr;
}
constexpr const OpRow* find_op(std::string_view name) {
  for (const OpRow& row : kOps) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

constexpr const char* op_name(Op op) {
  const OpRow* row = find_op(op);
  return row != nullptr ? row->name.data() : "unknown";
}

constexpr bool is_ud(Op op) {
  const OpRow* row = find_op(op);
  return row != nullptr && row->transport == Transport::ud;
}

// "send, write, read, ud"
inline std::string op_names() {
  std::string list;
  for (const OpRow& row : kOps) list += (list.empty() ? "" : ", ") + std::string(row.name);
  return list;
}

}  // namespace rdma_exporter::probe
