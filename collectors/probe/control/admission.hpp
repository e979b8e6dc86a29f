#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "collectors/probe/plan/limits.hpp"
#include "common/token_bucket.hpp"

namespace rdma_exporter::probe {

// Who holds what at the responder, by source group (source_group(),
// common/address.hpp): its handshakes (control connections that have not
// authenticated yet), its sessions (authenticated ones) and its token bucket
// of connections per minute. Two budgets:
// handshakes are few and short, and a full handshake budget makes room for
// a newcomer by ending the oldest handshake of the group that holds the most,
// so that a prober's hello always gets through however many connections
// others keep open; sessions are taken only once a set-up is authenticated.
// A group is forgotten only when that loses nothing (no handshake, no
// session, a full bucket), so a source cannot refill its bucket by crowding
// the table. No I/O: the responder holds the sockets, this the counts.
class SourceTable {
 public:
  using Clock = std::chrono::steady_clock;
  using Ticket = uint64_t;  // one connection; a lower ticket is older
  enum class Verdict { admitted, rate, capacity };
  struct Admission {
    Verdict verdict = Verdict::capacity;
    Ticket ticket = 0;              // admitted: the connection's, a handshake
    std::optional<Ticket> evicted;  // admitted: a handshake to end now to make room for it
  };

  // At most `max_groups` source groups are remembered.
  explicit SourceTable(
      ResponderLimits limits, std::size_t max_groups = limits::kMaxSources,
      std::function<Clock::time_point()> now = [] { return Clock::now(); });

  // A new connection from `group`: takes a token of its bucket and a
  // handshake slot. `rate` when the bucket is empty, `capacity` when the
  // table is full of groups that still hold something (or a handshake cap
  // is 0); otherwise admitted, possibly in place of an older handshake
  // (already released here: end that connection).
  Admission open(const std::string& group);
  // The connection's set-up was authenticated: its handshake slot becomes a
  // session slot. False, and it stays a handshake, when that would pass
  // max_sessions or max_sessions_per_source.
  bool authenticate(Ticket ticket);
  // The connection ended: whatever it held is released. Unknown tickets (an
  // evicted handshake) are ignored.
  void close(Ticket ticket);

  int handshakes() const { return handshakes_; }
  int sessions() const { return sessions_; }
  int handshakes(const std::string& group) const;
  int sessions(const std::string& group) const;
  std::size_t groups() const { return groups_.size(); }
  bool is_session(Ticket ticket) const;

 private:
  struct Group {
    explicit Group(TokenBucket b) : bucket(b) {}
    TokenBucket bucket;
    std::set<Ticket> handshakes;  // oldest first
    int sessions = 0;
  };
  struct Held {
    std::map<std::string, Group>::iterator group;
    bool session = false;
  };

  // The oldest handshake of the group holding the most (ties: the one with
  // the oldest handshake).
  std::optional<Ticket> eviction_candidate() const;
  void release_handshake(Ticket ticket);

  const ResponderLimits limits_;
  const std::size_t max_groups_;
  const std::function<Clock::time_point()> now_;
  std::map<std::string, Group> groups_;
  std::map<Ticket, Held> tickets_;
  Ticket next_ = 1;
  int handshakes_ = 0;
  int sessions_ = 0;
};

}  // namespace rdma_exporter::probe
