#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "common/result.hpp"
#include "exporter/probe/ud/buffer_slots.hpp"
#include "exporter/probe/verbs/completion_queue.hpp"
#include "exporter/probe/verbs/device.hpp"
#include "exporter/probe/verbs/memory.hpp"

// A UD port's verbs resources: its buffer of slots (buffer_slots.hpp), its
// completion queue and its queue pair, brought to RTS with every receive
// slot posted; and posting a slot. What the datagrams say is the port's
// business (port.hpp).
namespace rdma_exporter::probe {

struct UdQueuePairConfig {
  PortInfo port;
  uint32_t qkey = 0;
  uint32_t max_size = 4096;
  uint32_t recv_depth = 256;
  uint32_t send_depth = 256;
  std::string memory = "host";
  std::string where;  // names the queue pair in errors
};

class UdQueuePair {
 public:
  ~UdQueuePair();
  UdQueuePair(const UdQueuePair&) = delete;
  UdQueuePair& operator=(const UdQueuePair&) = delete;

  static Result<std::unique_ptr<UdQueuePair>> create(const Device& device,
                                                     const UdQueuePairConfig& config);

  uint32_t qpn() const { return qp_->qp_num; }
  const UdBufferSlots& slots() const { return slots_; }
  CompletionQueue& completions() { return *completions_; }

  // A receive slot as the device filled it: the GRH's bytes, then the
  // datagram.
  std::span<const uint8_t> received(uint32_t slot) const;
  // A send slot's bytes.
  std::span<uint8_t> send_buffer(uint32_t slot);

  Status post_recv(uint32_t slot);
  // Sends the first `size` bytes of a send slot to queue pair `qpn` (Q_Key
  // `qkey`) through `ah`.
  Status post_send(uint32_t slot, uint32_t size, ibv_ah* ah, uint32_t qpn, uint32_t qkey);

  // Whose completion a work request id is: a send slot's, or else a
  // receive slot's (the id is the slot).
  static std::optional<uint32_t> send_slot(uint64_t wr_id);
  static uint32_t recv_slot(uint64_t wr_id) { return static_cast<uint32_t>(wr_id); }

 private:
  UdQueuePair(const UdQueuePairConfig& config)
      : slots_(config.max_size, config.recv_depth, config.send_depth), where_(config.where) {}
  Status to_ready_to_send(const PortInfo& port, uint32_t qkey);

  UdBufferSlots slots_;
  std::string where_;
  std::unique_ptr<Memory> memory_;
  std::unique_ptr<CompletionQueue> completions_;  // outlives the queue pair
  ibv_qp* qp_ = nullptr;
};

}  // namespace rdma_exporter::probe
