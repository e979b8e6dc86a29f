#include "collectors/probe/control/admission.hpp"

#include <algorithm>

namespace rdma_exporter::probe {

SourceTable::SourceTable(ResponderLimits limits, std::size_t max_groups,
                         std::function<Clock::time_point()> now)
    : limits_(limits), max_groups_(max_groups), now_(std::move(now)) {}

SourceTable::Admission SourceTable::open(const std::string& group) {
  const Clock::time_point now = now_();
  auto it = groups_.find(group);
  if (it == groups_.end()) {
    if (groups_.size() >= max_groups_) {
      // Only groups whose forgetting loses nothing: a group with an empty
      // bucket that was forgotten would come back with a full one.
      std::erase_if(groups_, [now](const auto& kv) {
        const Group& g = kv.second;
        return g.sessions == 0 && g.handshakes.empty() && g.bucket.full(now);
      });
      if (groups_.size() >= max_groups_) return {Verdict::capacity};
    }
    const int per_minute = std::max(limits_.setups_per_minute_per_source, 0);
    const Clock::duration per_token =
        std::chrono::duration_cast<Clock::duration>(std::chrono::minutes(1)) /
        std::max(per_minute, 1);
    it = groups_.emplace(group, Group(TokenBucket(per_minute, per_token, now))).first;
  }
  Group& g = it->second;
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

}  // namespace rdma_exporter::probe
