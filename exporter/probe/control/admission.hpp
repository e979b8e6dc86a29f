#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "common/token_bucket.hpp"
#include "exporter/probe/plan/limits.hpp"

namespace rdma_exporter::probe {

// Who holds what at the responder, by source group (source_group(),
// common/address.hpp): its handshakes (control connections that have not
// authenticated yet), its sessions (authenticated ones) and its token bucket
// of connections per minute. Two budgets:
// handshakes are few and short, and a full handshake budget makes room for
// a newcomer by ending the oldest handshake of the group that holds the most,
// so that a prober's hello always gets through however many connections
// others keep open; sessions are taken only once a set-up is authenticated.
// A full table forgets a group that holds nothing (no handshake, no
// session) to make room: one whose bucket is full if there is one, else the
// one that connected least recently, so many addresses cannot fill the
// table and keep every new source out. No I/O: the responder holds the
// sockets, this the counts.
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
  // handshake slot. `rate` when the bucket is empty, `capacity` when every
  // group of a full table holds a handshake or a session (or a handshake
  // cap is 0); otherwise admitted, possibly in place of an older handshake
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
    Clock::time_point last_open{};  // its latest connection
  };
  struct Held {
    std::map<std::string, Group>::iterator group;
    bool session = false;
  };

  // The oldest handshake of the group holding the most (ties: the one with
  // the oldest handshake).
  std::optional<Ticket> eviction_candidate() const;
  // Makes room in a full table; false when every group holds something.
  bool forget_one(Clock::time_point now);
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

// The bytes the responder's RC sessions register (pin) for their buffers,
// within a budget (probe.max_pinned_bytes): a set-up whose buffer would
// pass it is refused, so peers can pin no more than the budget however many
// sessions they hold.
class PinBudget {
 public:
  explicit PinBudget(uint64_t max_bytes) : max_(max_bytes) {}
  // Takes `bytes` if they fit; false (and nothing taken) otherwise.
  bool take(uint64_t bytes);
  // Gives back what a take took.
  void give(uint64_t bytes);
  uint64_t held() const { return held_; }

 private:
  uint64_t max_;
  uint64_t held_ = 0;
};

}  // namespace rdma_exporter::probe
