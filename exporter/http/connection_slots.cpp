#include "exporter/http/connection_slots.hpp"

#include <utility>

#include "common/address.hpp"

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
  if (auto it = per_source.find(entry_->group); it != per_source.end() && --it->second <= 0) {
    per_source.erase(it);
  }
  slots_->entries_.erase(entry_);
  slots_ = nullptr;
}

HttpConnectionSlots::Admission HttpConnectionSlots::admit(const boost::asio::ip::address& source,
                                                          int max_connections,
                                                          int max_per_source) const {
  const std::string group = source_group(source);
  if (held(group) >= max_per_source) {
    // The group's first in the eviction order; its place is counted
    // overall too, so the overall cap holds after the swap.
    for (const Entry* e : order_) {
      if (e->group == group) return {Verdict::admitted, e->connection};
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
  std::string group = source_group(source);
  ++per_source_[group];
  return {this, entries_.insert(entries_.end(), Entry{std::move(group), connection, std::nullopt})};
}

int HttpConnectionSlots::held(const boost::asio::ip::address& source) const {
  return held(source_group(source));
}

int HttpConnectionSlots::held(const std::string& group) const {
  const auto it = per_source_.find(group);
  return it == per_source_.end() ? 0 : it->second;
}

HttpSessionBase* HttpConnectionSlots::next_to_evict() const {
  return order_.empty() ? nullptr : order_.front()->connection;
}

}  // namespace rdma_exporter
