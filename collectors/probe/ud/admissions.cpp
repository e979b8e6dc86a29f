#include "collectors/probe/ud/admissions.hpp"

#include <algorithm>

namespace rdma_exporter::probe {

std::optional<uint64_t> UdAdmissions::admit(const Gid& gid, uint32_t qpn,
                                            const UdAdmission& admission, Clock::time_point now) {
  std::vector<Entry>& entries = peers_[{gid, qpn}];
  if (entries.size() >= kMaxPerPeer) return std::nullopt;
  const auto interval = std::max(admission.interval, std::chrono::milliseconds(1));
  const auto per_token = std::chrono::duration_cast<Clock::duration>(interval) / kRateMultiple;
  const uint64_t id = next_id_++;
  entries.push_back(Entry{id, admission, TokenBucket(kBurst, per_token, now)});
  by_id_.emplace(id, Peer{gid, qpn});
  return id;
}

std::optional<std::pair<Gid, uint32_t>> UdAdmissions::revoke(uint64_t id) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  auto peer = peers_.find(it->second);
  by_id_.erase(it);
  if (peer == peers_.end()) return std::nullopt;
  std::erase_if(peer->second, [id](const Entry& e) { return e.id == id; });
  if (!peer->second.empty()) return std::nullopt;
  const Peer gone = peer->first;
  peers_.erase(peer);
  return gone;
}

UdAdmissions::Answer UdAdmissions::request(const Gid& gid, uint32_t qpn, uint8_t tclass,
                                           Clock::time_point now) {
  Answer answer;
  auto it = peers_.find({gid, qpn});
  if (it == peers_.end()) return answer;
  bool admitted = false;
  bool paid = false;
  for (Entry& e : it->second) {
    if (e.admission.tclass != tclass) continue;
    admitted = true;
    // One token for the request, from the first of its admissions that has one.
    if (!paid) paid = e.bucket.take(now);
    const Reply r{e.admission.qkey, e.admission.sl};
    const auto listed = answer.list();
    if (std::find(listed.begin(), listed.end(), r) == listed.end()) {
      answer.replies[answer.count++] = r;
    }
  }
  if (!admitted) {
    answer.count = 0;
    return answer;
  }
  if (!paid) {
    answer.verdict = Verdict::rate_limited;
    answer.count = 0;
    return answer;
  }
  answer.verdict = Verdict::answer;
  return answer;
}

std::vector<UdAdmission> UdAdmissions::of(const Gid& gid, uint32_t qpn) const {
  std::vector<UdAdmission> out;
  if (auto it = peers_.find({gid, qpn}); it != peers_.end()) {
    for (const Entry& e : it->second) out.push_back(e.admission);
  }
  return out;
}

}  // namespace rdma_exporter::probe
