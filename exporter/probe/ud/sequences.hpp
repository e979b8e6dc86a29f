#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>

#include "exporter/probe/ud/addressing.hpp"

// What the sequence numbers of the requests a port receives say of the way
// in. Each prober session numbers its requests 1, 2, 3, ...; the responder
// keeps, per session (the prober's GID, QPN and session number), the
// highest number it has seen: a request numbered above it says every
// number in between was sent, and the ones not received were lost on the
// way to this port. Beside the probers' own loss (request or reply), the
// responder's count tells a lost request from a lost reply.
// No verbs: the UD port tells it of every admitted request.
namespace rdma_exporter::probe {

class UdSequences {
 public:
  // Sessions followed at once; beyond, the one seen least recently goes.
  static constexpr std::size_t kMaxSessions = 4096;
  // Sessions of one prober queue pair (its UD classes to this port, and
  // the numbers of its earlier set-ups); beyond, its own least recently
  // seen goes, so that one prober's session numbers, however many, never
  // push out another prober's.
  static constexpr std::size_t kMaxSessionsPerQp = 64;
  // A number further than this from the highest, either way, is a prober
  // that started over (the same queue pair and session number again): it
  // counts from itself, and no loss.
  static constexpr uint64_t kMaxGap = 4096;

  // An admitted request; returns how many requests it adds to `expected`.
  uint64_t received(const Gid& gid, uint32_t qpn, uint32_t session, uint64_t seq);
  // The prober queue pair has no admission left: its sessions go.
  void forget(const Gid& gid, uint32_t qpn);

  // Requests the sequence numbers say were sent to this port (the first of
  // a session counts from itself), and those received.
  uint64_t expected() const { return expected_; }
  uint64_t received() const { return received_; }
  std::size_t sessions() const { return sessions_.size(); }

 private:
  using Key = std::tuple<Gid, uint32_t, uint32_t>;
  struct Session {
    uint64_t highest = 0;
    uint64_t seen = 0;  // when last seen, by the count of requests
  };
  using Sessions = std::map<Key, Session>;
  // Makes room for one more session of (gid, qpn).
  void make_room(const Gid& gid, uint32_t qpn);
  Sessions sessions_;
  uint64_t expected_ = 0;
  uint64_t received_ = 0;
};

}  // namespace rdma_exporter::probe
