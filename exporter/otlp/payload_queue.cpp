#include "exporter/otlp/payload_queue.hpp"

#include <algorithm>
#include <utility>

namespace rdma_exporter {

OtlpPayloadQueue::OtlpPayloadQueue(std::size_t capacity)
    : capacity_(std::max<std::size_t>(capacity, 1)) {}

bool OtlpPayloadQueue::push(Payload payload) {
  bool dropped = false;
  if (payloads_.size() >= capacity_) {
    payloads_.pop_front();
    ++dropped_;
    dropped = true;
  }
  payloads_.push_back(std::move(payload));
  return dropped;
}

OtlpPayloadQueue::Payload OtlpPayloadQueue::front() const {
  return payloads_.empty() ? nullptr : payloads_.front();
}

void OtlpPayloadQueue::pop(const Payload& sent) {
  if (!payloads_.empty() && payloads_.front() == sent) payloads_.pop_front();
}

}  // namespace rdma_exporter
