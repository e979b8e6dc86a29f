#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "common/result.hpp"
#include "exporter/probe/verbs/completion.hpp"
#include "exporter/probe/verbs/device.hpp"

// The completion path every probe queue pair shares: a completion channel
// whose descriptor never blocks, one completion queue (extended when
// completions must carry timestamps or the queue belongs to a thread
// domain, plain when the device offers no extended queue), polling it, and
// asking for the next event. The RC endpoint and the UD port both use it.
namespace rdma_exporter::probe {

struct CompletionQueueConfig {
  uint32_t depth = 16;
  // The queue serves UD receives: completions carry the length, the
  // sender's queue pair and LID, and whether a GRH came first.
  bool datagrams = false;
  // The protection domain of the queue pair's thread domain, when it has
  // one (Device::resource_pd() or Domain::resource_pd()); null: none.
  ibv_pd* parent_domain = nullptr;
  std::string where;  // names the queue in errors
};

class CompletionQueue {
 public:
  ~CompletionQueue();
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  static Result<std::unique_ptr<CompletionQueue>> create(const Device& device,
                                                         const CompletionQueueConfig& config);

  // For the queue pair's send and receive queues.
  ibv_cq* cq() const { return cq_; }
  // Completions carry the device's timestamps.
  bool timestamps() const { return timestamps_; }
  // The completion channel's descriptor: readable when an event is pending.
  int fd() const { return channel_->fd; }

  // Fills `out` with up to its size of completions; returns how many (0:
  // the queue is empty).
  Result<std::size_t> poll(std::span<Completion> out);
  // Asks for an event on fd() at the next completion.
  Status arm();
  // Takes and acknowledges the channel's pending events, without blocking.
  void consume_events();

 private:
  CompletionQueue() = default;
  Result<std::size_t> poll_extended(std::span<Completion> out);
  Result<std::size_t> poll_plain(std::span<Completion> out);

  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_cq_ex* cq_ex_ = nullptr;  // set when the queue is an extended one
  bool timestamps_ = false;
  bool datagrams_ = false;
};

}  // namespace rdma_exporter::probe
