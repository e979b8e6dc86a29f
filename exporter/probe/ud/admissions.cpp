#include "exporter/probe/ud/admissions.hpp"

#include <algorithm>

namespace rdma_exporter::probe {

UdAdmissions::UdAdmissions(std::chrono::milliseconds min_interval)
    : min_interval_(std::max(min_interval, kFastestInterval)) {}

double UdAdmissions::rate_of(const Destination& d) const {
  double rate = 0;
  for (const Entry& e : d.entries) {
    const auto interval = std::max(e.admission.interval, min_interval_);
    rate += kRateMultiple / std::chrono::duration<double>(interval).count();
  }
  return rate;
}

void UdAdmissions::reshape(Destination& d, Clock::time_point now) const {
  const double rate = rate_of(d);
  const auto per_token = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(rate > 0 ? 1.0 / rate : 0.0));
  d.bucket.reshape(kBurst * static_cast<double>(d.entries.size()), per_token, now);
}

std::optional<uint64_t> UdAdmissions::admit(const Gid& gid, uint32_t qpn,
                                            const UdAdmission& admission, Clock::time_point now) {
  auto it = peers_.find({gid, qpn});
  if (it == peers_.end()) {
    // A new destination starts with one burst.
    it = peers_.emplace(Peer{gid, qpn}, Destination{{}, TokenBucket(kBurst, {}, now)}).first;
  }
  Destination& d = it->second;
  if (d.entries.size() >= kMaxPerPeer) return std::nullopt;
  const uint64_t id = next_id_++;
  d.entries.push_back(Entry{id, admission});
  // More rate and room, not more tokens: admitting again refills nothing.
  reshape(d, now);
  by_id_.emplace(id, Peer{gid, qpn});
  return id;
}

std::optional<std::pair<Gid, uint32_t>> UdAdmissions::revoke(uint64_t id, Clock::time_point now) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  auto peer = peers_.find(it->second);
  by_id_.erase(it);
  if (peer == peers_.end()) return std::nullopt;
  Destination& d = peer->second;
  std::erase_if(d.entries, [id](const Entry& e) { return e.id == id; });
  if (!d.entries.empty()) {
    reshape(d, now);
    return std::nullopt;
  }
  const Peer gone = peer->first;
  peers_.erase(peer);
  return gone;
}

UdAdmissions::Answer UdAdmissions::request(const Gid& gid, uint32_t qpn, uint8_t tclass,
                                           Clock::time_point now) {
  Answer answer;
  auto it = peers_.find({gid, qpn});
  if (it == peers_.end()) return answer;
  Destination& d = it->second;
  bool admitted = false;
  for (const Entry& e : d.entries) {
    if (e.admission.tclass != tclass) continue;
    admitted = true;
    const Reply r{e.admission.qkey, e.admission.sl};
    const auto listed = answer.list();
    if (std::find(listed.begin(), listed.end(), r) != listed.end()) continue;
    // One token per reply; the oldest admission's reply is paid first.
    if (!d.bucket.take(now)) break;
    answer.replies[answer.count++] = r;
  }
  if (!admitted) return answer;
  answer.verdict = answer.count > 0 ? Verdict::answer : Verdict::rate_limited;
  return answer;
}

double UdAdmissions::reply_rate(const Gid& gid, uint32_t qpn) const {
  const auto it = peers_.find({gid, qpn});
  return it == peers_.end() ? 0.0 : rate_of(it->second);
}

std::vector<UdAdmission> UdAdmissions::of(const Gid& gid, uint32_t qpn) const {
  std::vector<UdAdmission> out;
  if (auto it = peers_.find({gid, qpn}); it != peers_.end()) {
    for (const Entry& e : it->second.entries) out.push_back(e.admission);
  }
  return out;
}

std::pair<std::size_t, std::size_t> UdAdmissions::peers_split(const std::set<Gid>& gids) const {
  std::size_t in = 0;
  for (const auto& [peer, destination] : peers_) in += gids.contains(peer.first) ? 1 : 0;
  return {in, peers_.size() - in};
}

}  // namespace rdma_exporter::probe
