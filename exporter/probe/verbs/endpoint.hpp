#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "common/result.hpp"
#include "exporter/probe/verbs/access.hpp"
#include "exporter/probe/verbs/completion_queue.hpp"
#include "exporter/probe/verbs/device.hpp"
#include "exporter/probe/verbs/memory.hpp"
#include "exporter/probe/verbs/queue_pair.hpp"
#include "exporter/probe/wire/protocol.hpp"
#include "exporter/probe/wire/qp_params.hpp"

// One RC queue pair of a probe session and its state machine (INIT, RTR,
// RTS), its completion queue and channel, posting and polling. Nothing here
// blocks: the event loop waits on the completion channel's file descriptor.
namespace rdma_exporter::probe {

// A queue pair's parameters, the port it uses, its memory and which end of
// the probe it is (what a peer may do with it: access_for()).
struct EndpointConfig : QpParams {
  PortInfo port;
  uint32_t recv_depth = 1;
  std::string memory = "host";
  Role role = Role::prober;
};

// One RC queue pair with its completion queue, completion channel and memory.
class Endpoint final : public RcQueuePair {
 public:
  ~Endpoint() override;
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  static Result<std::unique_ptr<Endpoint>> create(std::shared_ptr<Device> device,
                                                  const EndpointConfig& config);

  // This end as its peer addresses it; rkey and address are 0 unless the
  // buffer is remotely accessible.
  wire::Peer local() const override;
  const EndpointConfig& config() const { return config_; }
  const Device& device() const { return *device_; }
  bool timestamps() const { return completions_->timestamps(); }

  // INIT -> RTR -> RTS towards `remote`.
  Status connect(const wire::Peer& remote) override;

  Status post_recv(uint64_t wr_id) override;
  // The class's operation: a send, or an RDMA write or read of `size` bytes
  // at the remote's address.
  Status post(uint64_t wr_id, const wire::Peer& remote) override;
  Status post_send(uint64_t wr_id);

  // Fills `out` with up to its size of completions; returns how many.
  Result<std::size_t> poll(std::span<Completion> out) override;
  // Asks for an event on the channel at the next completion.
  Status arm() override;
  int channel_fd() const override { return completions_->fd(); }
  // Takes and acknowledges the channel's pending events, without blocking.
  void consume_events() override;
  std::optional<uint64_t> clock_now() const override;
  uint64_t clock_khz() const override { return device_->core_clock_khz(); }

 private:
  Endpoint() = default;
  Status post_as(Op op, uint64_t wr_id, const wire::Peer& remote);
  // The whole probe buffer as one scatter/gather entry.
  ibv_sge buffer() const;

  std::shared_ptr<Device> device_;
  EndpointConfig config_;
  Access access_;
  std::unique_ptr<Domain> domain_;  // when the buffer's rkey is handed out; outlives the rest
  std::unique_ptr<Memory> memory_;
  std::unique_ptr<CompletionQueue> completions_;  // outlives the queue pair
  ibv_qp* qp_ = nullptr;
  uint32_t psn_ = 0;
  uint32_t max_inline_ = 0;
};

}  // namespace rdma_exporter::probe
