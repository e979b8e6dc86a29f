#include "exporter/probe/control/admission.hpp"

#include <algorithm>

namespace rdma_exporter::probe {

SourceTable::SourceTable(ResponderLimits limits, std::size_t max_groups,
                         std::function<Clock::time_point()> now)
    : limits_(limits), max_groups_(max_groups), now_(std::move(now)) {}

SourceTable::Admission SourceTable::open(const std::string& group) {
  const Clock::time_point now = now_();
  auto it = groups_.find(group);
  if (it == groups_.end()) {
    if (groups_.size() >= max_groups_ && !forget_one(now)) return {Verdict::capacity};
    const int per_minute = std::max(limits_.setups_per_minute_per_source, 0);
    const Clock::duration per_token =
        std::chrono::duration_cast<Clock::duration>(std::chrono::minutes(1)) /
        std::max(per_minute, 1);
    it = groups_.emplace(group, Group(TokenBucket(per_minute, per_token, now))).first;
  }
  Group& g = it->second;
  g.last_open = now;
  if (!g.bucket.take(now)) return {Verdict::rate};
  if (limits_.max_handshakes <= 0 || limits_.max_handshakes_per_source <= 0) {
    return {Verdict::capacity};
  }
  Admission admission{Verdict::admitted};
  if (static_cast<int>(g.handshakes.size()) >= limits_.max_handshakes_per_source) {
    admission.evicted = *g.handshakes.begin();
  } else if (handshakes_ >= limits_.max_handshakes) {
    admission.evicted = eviction_candidate();
  }
  if (admission.evicted) release_handshake(*admission.evicted);
  admission.ticket = next_++;
  g.handshakes.insert(admission.ticket);
  tickets_.emplace(admission.ticket, Held{it, false});
  ++handshakes_;
  return admission;
}

// A group that holds nothing, with a full bucket if there is one (nothing
// is lost), else the one that opened a connection least recently. A group
// forgotten with a bucket not yet full comes back with a full one: only a
// source with more groups than the table remembers gains that, and it has
// a full bucket in each of its other groups anyway.
bool SourceTable::forget_one(Clock::time_point now) {
  auto victim = groups_.end();
  for (auto it = groups_.begin(); it != groups_.end(); ++it) {
    const Group& g = it->second;
    if (g.sessions != 0 || !g.handshakes.empty()) continue;
    if (g.bucket.full(now)) {
      victim = it;
      break;
    }
    if (victim == groups_.end() || g.last_open < victim->second.last_open) victim = it;
  }
  if (victim == groups_.end()) return false;
  groups_.erase(victim);
  return true;
}

std::optional<SourceTable::Ticket> SourceTable::eviction_candidate() const {
  const Group* most = nullptr;
  for (const auto& [name, g] : groups_) {
    if (g.handshakes.empty()) continue;
    if (most == nullptr || g.handshakes.size() > most->handshakes.size() ||
        (g.handshakes.size() == most->handshakes.size() &&
         *g.handshakes.begin() < *most->handshakes.begin())) {
      most = &g;
    }
  }
  if (most == nullptr) return std::nullopt;
  return *most->handshakes.begin();
}

void SourceTable::release_handshake(Ticket ticket) {
  auto t = tickets_.find(ticket);
  if (t == tickets_.end() || t->second.session) return;
  t->second.group->second.handshakes.erase(ticket);
  --handshakes_;
  tickets_.erase(t);
}

bool SourceTable::authenticate(Ticket ticket) {
  auto t = tickets_.find(ticket);
  if (t == tickets_.end()) return false;
  if (t->second.session) return true;
  Group& g = t->second.group->second;
  if (sessions_ >= limits_.max_sessions || g.sessions >= limits_.max_sessions_per_source) {
    return false;
  }
  g.handshakes.erase(ticket);
  --handshakes_;
  ++g.sessions;
  ++sessions_;
  t->second.session = true;
  return true;
}

void SourceTable::close(Ticket ticket) {
  auto t = tickets_.find(ticket);
  if (t == tickets_.end()) return;
  if (!t->second.session) return release_handshake(ticket);
  --t->second.group->second.sessions;
  --sessions_;
  tickets_.erase(t);
}

int SourceTable::handshakes(const std::string& group) const {
  auto it = groups_.find(group);
  return it == groups_.end() ? 0 : static_cast<int>(it->second.handshakes.size());
}

int SourceTable::sessions(const std::string& group) const {
  auto it = groups_.find(group);
  return it == groups_.end() ? 0 : it->second.sessions;
}

bool SourceTable::is_session(Ticket ticket) const {
  auto t = tickets_.find(ticket);
  return t != tickets_.end() && t->second.session;
}

bool PinBudget::take(uint64_t bytes) {
  if (bytes > max_ - held_) return false;
  held_ += bytes;
  return true;
}

void PinBudget::give(uint64_t bytes) {
  held_ -= std::min(bytes, held_);
}

}  // namespace rdma_exporter::probe
