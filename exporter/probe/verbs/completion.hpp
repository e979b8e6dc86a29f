#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>

namespace rdma_exporter::probe {

// One work completion, whichever kind of queue it came from.
struct Completion {
  uint64_t wr_id = 0;
  ibv_wc_status status = IBV_WC_SUCCESS;
  ibv_wc_opcode opcode = IBV_WC_SEND;  // read only from successful completions
  std::optional<uint64_t> timestamp;   // device clock ticks
  // Receives on a UD queue pair (CompletionQueueConfig::datagrams).
  uint32_t byte_len = 0;
  uint32_t src_qp = 0;
  uint16_t slid = 0;
  bool grh = false;
};

}  // namespace rdma_exporter::probe
