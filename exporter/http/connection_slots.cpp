#include "exporter/http/connection_slots.hpp"

#include <utility>

namespace rdma_exporter {

HttpConnectionSlot::HttpConnectionSlot(HttpConnectionSlot&& other) noexcept
    : slots_(std::exchange(other.slots_, nullptr)), entry_(other.entry_) {}

HttpConnectionSlot& HttpConnectionSlot::operator=(HttpConnectionSlot&& other) noexcept {
  if (this != &other) {
    release();
    slots_ = std::exchange(other.slots_, nullptr);
    entry_ = other.entry_;
  }
  return *this;
}

void HttpConnectionSlot::queue() {
  if (!slots_ || entry_->queued) return;
  entry_->queued = slots_->order_.insert(slots_->order_.end(), &*entry_);
}

void HttpConnectionSlot::queue_first() {
  if (!slots_) return;
  unqueue();
  entry_->queued = slots_->order_.insert(slots_->order_.begin(), &*entry_);
}

void HttpConnectionSlot::unqueue() {
  if (!slots_ || !entry_->queued) return;
  slots_->order_.erase(*entry_->queued);
  entry_->queued.reset();
}

void HttpConnectionSlot::release() {
  if (!slots_) return;
  unqueue();
  auto& per_source = slots_->per_source_;
  if (auto it = per_source.find(entry_->source); it != per_source.end() && --it->second <= 0) {
    per_source.erase(it);
  }
  slots_->entries_.erase(entry_);
  slots_ = nullptr;
}

HttpConnectionSlots::Admission HttpConnectionSlots::admit(const boost::asio::ip::address& source,
                                                          int max_connections,
                                                          int max_per_source) const {
  if (held(source) >= max_per_source) {
    // The address's first in the eviction order; its place is counted
    // overall too, so the overall cap holds after the swap.
    for (const Entry* e : order_) {
      if (e->source == source) return {Verdict::admitted, e->connection};
    }
    return {Verdict::max_connections_per_source, nullptr};
  }
  if (held() >= max_connections) {
    if (order_.empty()) return {Verdict::max_connections, nullptr};
    return {Verdict::admitted, order_.front()->connection};
  }
  return {Verdict::admitted, nullptr};
}

HttpConnectionSlot HttpConnectionSlots::acquire(const boost::asio::ip::address& source,
                                                HttpSessionBase* connection) {
  ++per_source_[source];
  return {this, entries_.insert(entries_.end(), Entry{source, connection, std::nullopt})};
}

int HttpConnectionSlots::held(const boost::asio::ip::address& source) const {
  const auto it = per_source_.find(source);
  return it == per_source_.end() ? 0 : it->second;
}

HttpSessionBase* HttpConnectionSlots::next_to_evict() const {
  return order_.empty() ? nullptr : order_.front()->connection;
}

}  // namespace rdma_exporter
