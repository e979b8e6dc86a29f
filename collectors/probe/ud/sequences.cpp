#include "collectors/probe/ud/sequences.hpp"

#include <algorithm>

namespace rdma_exporter::probe {

uint64_t UdSequences::received(const Gid& gid, uint32_t qpn, uint32_t session, uint64_t seq) {
  ++received_;
  const Key key{gid, qpn, session};
  auto it = sessions_.find(key);
  uint64_t added = 1;
  if (it == sessions_.end()) {
    if (sessions_.size() >= kMaxSessions) {
      sessions_.erase(std::min_element(
          sessions_.begin(), sessions_.end(),
          [](const auto& a, const auto& b) { return a.second.seen < b.second.seen; }));
    }
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

void UdSequences::forget(const Gid& gid, uint32_t qpn) {
  std::erase_if(sessions_, [&](const auto& kv) {
    return std::get<0>(kv.first) == gid && std::get<1>(kv.first) == qpn;
  });
}

}  // namespace rdma_exporter::probe
