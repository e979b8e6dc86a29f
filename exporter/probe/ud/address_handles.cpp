#include "exporter/probe/ud/address_handles.hpp"

#include <algorithm>

namespace rdma_exporter::probe {

AddressHandles::AddressHandles(std::size_t per_destination, std::size_t total, Destroy destroy)
    : per_destination_(std::max<std::size_t>(per_destination, 1)),
      total_(std::max<std::size_t>(total, 1)),
      destroy_(std::move(destroy)) {}

AddressHandles::~AddressHandles() {
  clear();
}

void AddressHandles::clear() {
  for (auto& [ah, slot] : slots_) destroy_(ah);
  slots_.clear();
  by_key_.clear();
  lru_.clear();
  per_destination_count_.clear();
}

ibv_ah* AddressHandles::find(const Key& key) {
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return nullptr;
  Slot& slot = slots_.at(it->second);
  lru_.splice(lru_.begin(), lru_, slot.lru);
  return it->second;
}

std::size_t AddressHandles::of(const Gid& gid, uint16_t lid) const {
  auto it = per_destination_count_.find({gid, lid});
  return it == per_destination_count_.end() ? 0 : it->second;
}

void AddressHandles::evict(ibv_ah* ah) {
  auto it = slots_.find(ah);
  if (it == slots_.end() || it->second.retired) return;
  Slot& slot = it->second;
  by_key_.erase(slot.key);
  lru_.erase(slot.lru);
  auto count = per_destination_count_.find(destination(slot.key));
  if (count != per_destination_count_.end() && --count->second == 0) {
    per_destination_count_.erase(count);
  }
  if (slot.in_flight == 0) {
    destroy_(ah);
    slots_.erase(it);
  } else {
    slot.retired = true;
  }
}

void AddressHandles::add(const Key& key, ibv_ah* ah) {
  if (ah == nullptr || by_key_.contains(key)) return;
  const Destination dest = destination(key);
  if (of(dest.first, dest.second) >= per_destination_) {
    // The least recently used handle of this destination.
    auto oldest = std::find_if(lru_.rbegin(), lru_.rend(),
                               [&](ibv_ah* h) { return destination(slots_.at(h).key) == dest; });
    if (oldest != lru_.rend()) evict(*oldest);
  }
  if (by_key_.size() >= total_ && !lru_.empty()) evict(lru_.back());
  lru_.push_front(ah);
  slots_[ah] = Slot{key, 0, false, lru_.begin()};
  by_key_.emplace(key, ah);
  ++per_destination_count_[dest];
}

void AddressHandles::posted(ibv_ah* ah) {
  if (auto it = slots_.find(ah); it != slots_.end()) ++it->second.in_flight;
}

void AddressHandles::completed(ibv_ah* ah) {
  auto it = slots_.find(ah);
  if (it == slots_.end()) return;
  Slot& slot = it->second;
  if (slot.in_flight > 0) --slot.in_flight;
  if (slot.retired && slot.in_flight == 0) {
    destroy_(ah);
    slots_.erase(it);
  }
}

}  // namespace rdma_exporter::probe
