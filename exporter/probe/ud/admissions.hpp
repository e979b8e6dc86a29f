#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "common/token_bucket.hpp"
#include "exporter/probe/ud/addressing.hpp"

// Which probers a port's UD queue pair answers, with what, and how often.
// No verbs: the UD port asks this table about every request it receives.
namespace rdma_exporter::probe {

// One UD session's admission: the Q_Key and service level its replies go
// out with, the traffic class its requests carry, and how often its class
// sends.
struct UdAdmission {
  uint32_t qkey = 0;
  uint8_t sl = 0;
  uint8_t tclass = 0;
  std::chrono::milliseconds interval{1};

  bool operator==(const UdAdmission&) const = default;
};

// The admissions of every prober queue pair (GID and QPN), each kept with
// its own parameters: a session that registers another's GID and QPN with
// a wrong Q_Key adds replies that the other's queue pair drops, and takes
// nothing from it. A request is answered once per distinct (Q_Key, service
// level) among the admissions of its queue pair whose traffic class it
// carries, oldest admission first. Every reply costs one token of its
// destination queue pair's bucket: kRateMultiple tokens per interval of
// each admission's class (the interval at least the floor given to the
// constructor), at most kBurst per admission held; what finds no token is
// not sent. However many admissions name one queue pair, and however the
// requests are made, it gets no more replies than its admissions' classes
// at the floor could ask for.
class UdAdmissions {
 public:
  using Clock = TokenBucket::Clock;
  // Admissions one prober queue pair may hold at once (one per UD class it
  // probes this port with).
  static constexpr std::size_t kMaxPerPeer = 8;
  // Requests answered per admission: kRateMultiple per interval of its
  // class, after a burst of kBurst.
  static constexpr int kRateMultiple = 2;
  static constexpr double kBurst = 32;
  // The shortest interval the table ever counts a class at.
  static constexpr std::chrono::milliseconds kFastestInterval{1};

  // Classes are counted at `min_interval` at the fastest (not below
  // kFastestInterval).
  explicit UdAdmissions(std::chrono::milliseconds min_interval = kFastestInterval);

  struct Reply {
    uint32_t qkey = 0;
    uint8_t sl = 0;

    bool operator==(const Reply&) const = default;
  };
  enum class Verdict { answer, not_admitted, rate_limited };
  struct Answer {
    Verdict verdict = Verdict::not_admitted;
    std::array<Reply, kMaxPerPeer> replies{};
    std::size_t count = 0;  // answer: at least 1

    std::span<const Reply> list() const { return {replies.data(), count}; }
  };

  // A new admission of the queue pair (gid, qpn); its id, for revoke(), or
  // nothing when the queue pair already holds kMaxPerPeer.
  std::optional<uint64_t> admit(const Gid& gid, uint32_t qpn, const UdAdmission& admission,
                                Clock::time_point now);
  // Ends an admission; unknown ids (and 0) are ignored. Returns the queue
  // pair (GID, QPN) when that was its last admission.
  std::optional<std::pair<Gid, uint32_t>> revoke(uint64_t id, Clock::time_point now);

  // What a request from (gid, qpn) carrying `tclass` gets: an answer with
  // the replies there were tokens for, rate_limited when there was none.
  Answer request(const Gid& gid, uint32_t qpn, uint8_t tclass, Clock::time_point now);
  // Replies a second (gid, qpn) may have in the long run, past its burst.
  double reply_rate(const Gid& gid, uint32_t qpn) const;

  // Prober queue pairs admitted (distinct GID and QPN).
  std::size_t peers() const { return peers_.size(); }
  // Of those, how many have a GID in `gids`, and how many not.
  std::pair<std::size_t, std::size_t> peers_split(const std::set<Gid>& gids) const;
  // Admissions in all.
  std::size_t size() const { return by_id_.size(); }
  // The admissions of (gid, qpn), oldest first.
  std::vector<UdAdmission> of(const Gid& gid, uint32_t qpn) const;

 private:
  using Peer = std::pair<Gid, uint32_t>;
  struct Entry {
    uint64_t id = 0;
    UdAdmission admission;
  };
  // One destination queue pair: its admissions and the bucket its replies
  // are paid from.
  struct Destination {
    std::vector<Entry> entries;
    TokenBucket bucket;
  };
  // The bucket's limits for the destination's admissions, from `now` on.
  void reshape(Destination& d, Clock::time_point now) const;
  double rate_of(const Destination& d) const;

  std::chrono::milliseconds min_interval_;
  std::map<Peer, Destination> peers_;
  std::map<uint64_t, Peer> by_id_;
  uint64_t next_id_ = 1;
};

}  // namespace rdma_exporter::probe
