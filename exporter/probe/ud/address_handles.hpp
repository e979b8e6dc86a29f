#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "exporter/probe/ud/admissions.hpp"

// The address handles of a port's UD queue pair, bounded: per destination
// and in all, the least recently used goes first. A handle that goes while
// sends that use it are in flight is destroyed when the last of them
// completes, not before, and not later. No verbs calls but the destroy
// function given.
namespace rdma_exporter::probe {

class AddressHandles {
 public:
  using Key = std::tuple<Gid, uint16_t, uint8_t, uint8_t, uint32_t>;  // gid lid tclass sl flow
  using Destroy = std::function<void(ibv_ah*)>;

  AddressHandles(std::size_t per_destination, std::size_t total, Destroy destroy);
  ~AddressHandles();
  AddressHandles(const AddressHandles&) = delete;
  AddressHandles& operator=(const AddressHandles&) = delete;

  // The handle for `key`, now the most recently used; null when there is none.
  ibv_ah* find(const Key& key);
  // Adds the handle made for `key` (which has none), first making room:
  // the least recently used handle of the same destination (GID and LID)
  // goes when that destination has `per_destination`, the least recently
  // used of all when there are `total`.
  void add(const Key& key, ibv_ah* ah);
  // A send with `ah` was posted, and completed (or was flushed).
  void posted(ibv_ah* ah);
  void completed(ibv_ah* ah);
  // Destroys every handle, in flight or not: the queue pair is gone.
  void clear();

  // Handles in the cache, and those out of it that wait for their sends.
  std::size_t live() const { return by_key_.size(); }
  std::size_t retired() const { return slots_.size() - by_key_.size(); }
  // Live handles to one destination.
  std::size_t of(const Gid& gid, uint16_t lid) const;

 private:
  using Destination = std::pair<Gid, uint16_t>;
  struct Slot {
    Key key;
    uint32_t in_flight = 0;
    bool retired = false;
    std::list<ibv_ah*>::iterator lru;
  };
  static Destination destination(const Key& key) { return {std::get<0>(key), std::get<1>(key)}; }
  void evict(ibv_ah* ah);

  const std::size_t per_destination_;
  const std::size_t total_;
  const Destroy destroy_;
  std::unordered_map<ibv_ah*, Slot> slots_;  // live and retired
  std::map<Key, ibv_ah*> by_key_;            // live
  std::list<ibv_ah*> lru_;                   // live, most recently used first
  std::map<Destination, std::size_t> per_destination_count_;
};

}  // namespace rdma_exporter::probe
