#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>
#include <span>

#include "common/result.hpp"
#include "exporter/probe/verbs/completion.hpp"
#include "exporter/probe/wire/protocol.hpp"

// What the RC prober does with its queue pair, as an interface: Endpoint is
// the one on a device, and the prober's tests give it a fake, so its state
// machine (completions, echoes, timeouts, failures) runs without a device.
namespace rdma_exporter::probe {

class RcQueuePair {
 public:
  // Receives carry this bit in their work request id; connect() posts the
  // queue pair's receives, numbered from 0.
  static constexpr uint64_t kRecvTag = 1ull << 63;

  virtual ~RcQueuePair() = default;

  // This end as its peer addresses it.
  virtual wire::Peer local() const = 0;
  // INIT -> RTR -> RTS towards `remote`, with the receives posted.
  virtual Status connect(const wire::Peer& remote) = 0;
  // The class's operation towards `remote`.
  virtual Status post(uint64_t wr_id, const wire::Peer& remote) = 0;
  virtual Status post_recv(uint64_t wr_id) = 0;
  // Fills `out` with up to its size of completions; returns how many.
  virtual Result<std::size_t> poll(std::span<Completion> out) = 0;
  // Asks for an event on channel_fd() at the next completion.
  virtual Status arm() = 0;
  virtual int channel_fd() const = 0;
  // Takes the channel's pending events, without blocking.
  virtual void consume_events() = 0;
  // The device clock now, in the ticks completions carry; nothing when
  // completions carry no timestamps.
  virtual std::optional<uint64_t> clock_now() const = 0;
  // The device clock's rate.
  virtual uint64_t clock_khz() const = 0;

 protected:
  RcQueuePair() = default;
  RcQueuePair(const RcQueuePair&) = default;
  RcQueuePair& operator=(const RcQueuePair&) = default;
};

}  // namespace rdma_exporter::probe
