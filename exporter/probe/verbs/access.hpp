#pragma once

#include <infiniband/verbs.h>

#include "exporter/probe/wire/qp_params.hpp"

// What a peer may do with a probe's memory and queue pair: the one place the
// access flags of every memory registration and every RC queue pair come
// from. Each side gets only what its operation needs, so a peer that learns
// or guesses an rkey reaches nothing it was not meant to.
namespace rdma_exporter::probe {

// Which end of a probe a queue pair or buffer is on.
enum class Role : uint8_t { prober, responder };

struct Access {
  int memory = 0;           // ibv_reg_mr / ibv_reg_dmabuf_mr access
  int queue_pair = 0;       // qp_access_flags of an RC queue pair (remote operations it accepts)
  bool own_domain = false;  // a protection domain of its own: its rkey is handed to a peer

  bool operator==(const Access&) const = default;
};

// The prober's buffer is the source of its sends and writes and the sink of
// its reads and of the responder's echoes: local writes only, and its queue
// pair accepts no remote operation. The responder's get what the op's row
// in wire/ops.hpp says: remotely accessible memory (write, read) only in a
// protection domain of the session's own. UD buffers are never remotely
// accessible (UD has no RDMA operations).
constexpr Access access_for(Op op, Role role) {
  if (role == Role::prober) return Access{IBV_ACCESS_LOCAL_WRITE, 0, false};
  const OpRow* row = find_op(op);
  if (row == nullptr) return Access{};  // no such op: no access at all
  return Access{row->responder_memory_access, row->responder_qp_access, row->remote_memory};
}

// Whether memory registered with `access` may be reached by a peer.
constexpr bool remotely_accessible(int access) {
  return (access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)) !=
         0;
}

}  // namespace rdma_exporter::probe
