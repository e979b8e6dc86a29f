#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "collectors/probe/ud/addressing.hpp"
#include "common/token_bucket.hpp"

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
// carries, at most at the rate those admissions' classes send at, times
// kRateMultiple (with a burst of kBurst requests per admission); beyond it
// the request is dropped.
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
  std::optional<std::pair<Gid, uint32_t>> revoke(uint64_t id);

  // What a request from (gid, qpn) carrying `tclass` gets.
  Answer request(const Gid& gid, uint32_t qpn, uint8_t tclass, Clock::time_point now);

  // Prober queue pairs admitted (distinct GID and QPN).
  std::size_t peers() const { return peers_.size(); }
  // Admissions in all.
  std::size_t size() const { return by_id_.size(); }
  // The admissions of (gid, qpn), oldest first.
  std::vector<UdAdmission> of(const Gid& gid, uint32_t qpn) const;

 private:
  using Peer = std::pair<Gid, uint32_t>;
  struct Entry {
    uint64_t id = 0;
    UdAdmission admission;
    TokenBucket bucket;
  };

  std::map<Peer, std::vector<Entry>> peers_;
  std::map<uint64_t, Peer> by_id_;
  uint64_t next_id_ = 1;
};

}  // namespace rdma_exporter::probe
