#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

namespace rdma_exporter {

// The encoded payloads waiting to be sent, oldest first, at most `capacity`
// (otlp.queue_size): a payload added to a full queue pushes the oldest out,
// counted as dropped. The oldest is sent until the receiver takes it or
// refuses it for good; values are cumulative, so what a dropped payload
// said arrives with a later one. Not thread-safe.
class OtlpPayloadQueue {
 public:
  using Payload = std::shared_ptr<const std::string>;

  // A capacity of 0 is taken as 1.
  explicit OtlpPayloadQueue(std::size_t capacity);

  // Adds a payload at the back; returns whether the oldest was dropped to
  // make room for it.
  bool push(Payload payload);
  // The oldest, the one to send next; null when empty.
  Payload front() const;
  // The payload sent has left (taken, or refused for good): removes it if it
  // is still the oldest.
  void pop(const Payload& sent);
  // Discards every payload (the pusher is stopping); not counted as dropped.
  void clear() { payloads_.clear(); }

  std::size_t size() const { return payloads_.size(); }
  bool empty() const { return payloads_.empty(); }
  std::size_t capacity() const { return capacity_; }
  // Payloads pushed out unsent since the start.
  uint64_t dropped() const { return dropped_; }

 private:
  std::size_t capacity_;
  std::deque<Payload> payloads_;
  uint64_t dropped_ = 0;
};

}  // namespace rdma_exporter
