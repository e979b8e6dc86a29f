#include "exporter/probe/ud/sequences.hpp"

#include <algorithm>
#include <iterator>
#include <limits>

namespace rdma_exporter::probe {

uint64_t UdSequences::received(const Gid& gid, uint32_t qpn, uint32_t session, uint64_t seq) {
  ++received_;
  const Key key{gid, qpn, session};
  auto it = sessions_.find(key);
  uint64_t added = 1;
  if (it == sessions_.end()) {
    make_room(gid, qpn);
    it = sessions_.emplace(key, Session{seq, 0}).first;
  } else if (seq > it->second.highest) {
    // Those in between were lost, unless the prober started over.
    const uint64_t gap = seq - it->second.highest;
    added = gap <= kMaxGap ? gap : 1;
    it->second.highest = seq;
  } else if (it->second.highest - seq > kMaxGap) {
    it->second.highest = seq;  // started over, lower
  } else {
    added = 0;  // late, or the same again: expected already
  }
  it->second.seen = received_;
  expected_ += added;
  return added;
}

void UdSequences::make_room(const Gid& gid, uint32_t qpn) {
  const auto least_recent = [](const auto& a, const auto& b) {
    return a.second.seen < b.second.seen;
  };
  // The queue pair's sessions are adjacent in the map's order.
  const auto first = sessions_.lower_bound(Key{gid, qpn, 0});
  const auto last = sessions_.upper_bound(Key{gid, qpn, std::numeric_limits<uint32_t>::max()});
  if (static_cast<std::size_t>(std::distance(first, last)) >= kMaxSessionsPerQp) {
    sessions_.erase(std::min_element(first, last, least_recent));
  } else if (sessions_.size() >= kMaxSessions) {
    sessions_.erase(std::min_element(sessions_.begin(), sessions_.end(), least_recent));
  }
}

void UdSequences::forget(const Gid& gid, uint32_t qpn) {
  std::erase_if(sessions_, [&](const auto& kv) {
    return std::get<0>(kv.first) == gid && std::get<1>(kv.first) == qpn;
  });
}

}  // namespace rdma_exporter::probe
