// What a peer can reach through the probe's verbs resources, without an RDMA
// device: the access of every buffer and queue pair, UD admissions kept
// apart per session and bounded per queue pair, the per-peer rate of
// answers, bounded address handles that go with their last send, and a Q_Key
// that is random or nothing.

#include "exporter/probe/verbs/access.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <vector>

#include "common/token_bucket.hpp"
#include "exporter/probe/stats/stats.hpp"
#include "exporter/probe/ud/address_handles.hpp"
#include "exporter/probe/ud/addressing.hpp"
#include "exporter/probe/ud/admissions.hpp"
#include "exporter/probe/ud/port.hpp"
#include "tests/support/snapshot_query.hpp"

namespace rdma_exporter::probe {
namespace {

using namespace std::chrono_literals;
using Clock = UdAdmissions::Clock;
using Verdict = UdAdmissions::Verdict;
using Reply = UdAdmissions::Reply;

constexpr int kLocalWrite = IBV_ACCESS_LOCAL_WRITE;
constexpr int kRemoteWrite = IBV_ACCESS_REMOTE_WRITE;
constexpr int kRemoteRead = IBV_ACCESS_REMOTE_READ;

// ---- access_for: the whole table ----

TEST(ProbeVerbsAccess, EachSideGetsOnlyWhatItsOperationNeeds) {
  struct Row {
    Op op;
    Role role;
    Access want;
  };
  const std::vector<Row> table = {
      // The prober's buffer: never remotely accessible, its queue pair
      // accepts no remote operation; local writes for reads and echoes.
      {Op::send, Role::prober, {kLocalWrite, 0, false}},
      {Op::write, Role::prober, {kLocalWrite, 0, false}},
      {Op::read, Role::prober, {kLocalWrite, 0, false}},
      {Op::ud, Role::prober, {kLocalWrite, 0, false}},
      // The responder's: written by a write probe, read by a read probe,
      // each in a protection domain of its own; a send probe's only
      // receives.
      {Op::write, Role::responder, {kLocalWrite | kRemoteWrite, kRemoteWrite, true}},
      {Op::read, Role::responder, {kRemoteRead, kRemoteRead, true}},
      {Op::send, Role::responder, {kLocalWrite, 0, false}},
      {Op::ud, Role::responder, {kLocalWrite, 0, false}},
  };
  for (const Row& r : table) {
    SCOPED_TRACE(std::string(op_name(r.op)) + (r.role == Role::prober ? " prober" : " responder"));
    const Access a = access_for(r.op, r.role);
    EXPECT_EQ(a.memory, r.want.memory);
    EXPECT_EQ(a.queue_pair, r.want.queue_pair);
    EXPECT_EQ(a.own_domain, r.want.own_domain);
  }
}

TEST(ProbeVerbsAccess, NoRemoteAccessWithoutADomainOfItsOwnAndNeverBoth) {
  for (Op op : {Op::send, Op::write, Op::read, Op::ud}) {
    for (Role role : {Role::prober, Role::responder}) {
      const Access a = access_for(op, role);
      // Whatever a peer may reach is alone in its protection domain.
      EXPECT_EQ(remotely_accessible(a.memory), a.own_domain) << op_name(op);
      // Never remote read and remote write on one buffer, never atomics.
      EXPECT_NE(a.memory & (kRemoteRead | kRemoteWrite), kRemoteRead | kRemoteWrite);
      EXPECT_EQ(a.memory & IBV_ACCESS_REMOTE_ATOMIC, 0);
      EXPECT_EQ(a.queue_pair & IBV_ACCESS_REMOTE_ATOMIC, 0);
      // A queue pair accepts exactly the remote operations its buffer allows.
      EXPECT_EQ(a.queue_pair, a.memory & (kRemoteRead | kRemoteWrite));
      // Remote write needs local write (verbs refuses it otherwise).
      if ((a.memory & kRemoteWrite) != 0) {
        EXPECT_NE(a.memory & kLocalWrite, 0);
      }
    }
  }
}

TEST(ProbeVerbsAccess, AnOpNoRowHasGetsNoAccessAtTheResponder) {
  const Access none = access_for(static_cast<Op>(9), Role::responder);
  EXPECT_EQ(none.memory, 0);
  EXPECT_EQ(none.queue_pair, 0);
  EXPECT_FALSE(none.own_domain);
}

TEST(ProbeVerbsAccess, OnlyRemoteRightsCountAsRemotelyAccessible) {
  EXPECT_FALSE(remotely_accessible(0));
  EXPECT_FALSE(remotely_accessible(kLocalWrite));
  EXPECT_TRUE(remotely_accessible(kRemoteRead));
  EXPECT_TRUE(remotely_accessible(kLocalWrite | kRemoteWrite));
  EXPECT_TRUE(remotely_accessible(IBV_ACCESS_REMOTE_ATOMIC));
}

// ---- UD admissions: each session's own parameters ----

Gid gid_of(uint8_t last) {
  Gid g{};
  g[10] = 0xff;
  g[11] = 0xff;
  g[12] = 192;
  g[13] = 168;
  g[14] = 100;
  g[15] = last;
  return g;
}

UdAdmission admission(uint32_t qkey, uint8_t sl = 0, uint8_t tclass = 0,
                      std::chrono::milliseconds interval = 100ms) {
  return UdAdmission{qkey, sl, tclass, interval};
}

std::vector<Reply> replies_of(const UdAdmissions::Answer& a) {
  return {a.list().begin(), a.list().end()};
}

TEST(ProbeUdAdmissions, AWrongQkeyForAVictimsQueuePairLeavesTheVictimsReplies) {
  UdAdmissions table;
  const auto t0 = Clock::time_point{} + 1h;
  const Gid victim = gid_of(7);
  const auto own = table.admit(victim, 0x11, admission(0x1234, 3), t0);
  ASSERT_TRUE(own);
  // Another session names the victim's GID and QPN with a wrong Q_Key and SL.
  const auto poison = table.admit(victim, 0x11, admission(0x0bad, 5), t0);
  ASSERT_TRUE(poison);
  EXPECT_NE(*own, *poison);
  EXPECT_EQ(table.peers(), 1u);
  EXPECT_EQ(table.size(), 2u);

  auto a = table.request(victim, 0x11, 0, t0);
  ASSERT_EQ(a.verdict, Verdict::answer);
  // The victim's own parameters are still answered.
  const auto r = replies_of(a);
  EXPECT_NE(std::find(r.begin(), r.end(), Reply{0x1234, 3}), r.end());
  EXPECT_EQ(r.size(), 2u);

  // The poisoner leaves: only the victim's admission is left, and the
  // queue pair is not gone.
  EXPECT_EQ(table.revoke(*poison, t0), std::nullopt);
  a = table.request(victim, 0x11, 0, t0);
  ASSERT_EQ(a.verdict, Verdict::answer);
  EXPECT_EQ(replies_of(a), (std::vector<Reply>{{0x1234, 3}}));
  EXPECT_EQ(table.of(victim, 0x11), (std::vector<UdAdmission>{admission(0x1234, 3)}));

  // Revoking the victim's admits nothing else; unknown ids change nothing.
  EXPECT_EQ(table.revoke(*poison, t0), std::nullopt);
  EXPECT_EQ(table.revoke(0, t0), std::nullopt);
  const auto gone = table.revoke(*own, t0);  // its last: the queue pair is gone
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->first, victim);
  EXPECT_EQ(gone->second, 0x11u);
  EXPECT_EQ(table.request(victim, 0x11, 0, t0).verdict, Verdict::not_admitted);
  EXPECT_EQ(table.peers(), 0u);
  EXPECT_EQ(table.size(), 0u);
}

TEST(ProbeUdAdmissions, OneReplyPerDistinctQkeyAndServiceLevel) {
  UdAdmissions table;
  const auto t0 = Clock::time_point{} + 1h;
  const Gid g = gid_of(9);
  // Two classes of one prober port on one SL, a third on another.
  ASSERT_TRUE(table.admit(g, 0x22, admission(0x77, 1), t0));
  ASSERT_TRUE(table.admit(g, 0x22, admission(0x77, 1), t0));
  ASSERT_TRUE(table.admit(g, 0x22, admission(0x77, 2), t0));
  const auto a = table.request(g, 0x22, 0, t0);
  ASSERT_EQ(a.verdict, Verdict::answer);
  EXPECT_EQ(replies_of(a), (std::vector<Reply>{{0x77, 1}, {0x77, 2}}));
  EXPECT_EQ(table.peers(), 1u);
}

TEST(ProbeUdAdmissions, OnlyTheAdmittedQueuePairAndTrafficClassesAreAnswered) {
  UdAdmissions table;
  const auto t0 = Clock::time_point{} + 1h;
  ASSERT_TRUE(table.admit(gid_of(1), 0x33, admission(0x99, 0, 104), t0));
  EXPECT_EQ(table.request(gid_of(1), 0x33, 104, t0).verdict, Verdict::answer);
  EXPECT_EQ(table.request(gid_of(1), 0x33, 0, t0).verdict, Verdict::not_admitted);
  EXPECT_EQ(table.request(gid_of(1), 0x34, 104, t0).verdict, Verdict::not_admitted);
  EXPECT_EQ(table.request(gid_of(2), 0x33, 104, t0).verdict, Verdict::not_admitted);
  EXPECT_EQ(table.request(gid_of(1), 0x33, 0, t0).count, 0u);
}

TEST(ProbeUdAdmissions, AQueuePairHoldsAtMostASmallNumberOfAdmissions) {
  UdAdmissions table;
  const auto t0 = Clock::time_point{} + 1h;
  std::vector<uint64_t> ids;
  for (std::size_t i = 0; i < UdAdmissions::kMaxPerPeer; ++i) {
    auto id = table.admit(gid_of(3), 0x44, admission(static_cast<uint32_t>(i + 1)), t0);
    ASSERT_TRUE(id);
    ids.push_back(*id);
  }
  EXPECT_FALSE(table.admit(gid_of(3), 0x44, admission(0x1000), t0));
  // Another queue pair is not affected, and a revoked admission makes room.
  EXPECT_TRUE(table.admit(gid_of(3), 0x45, admission(0x1000), t0));
  table.revoke(ids.front(), t0);
  EXPECT_TRUE(table.admit(gid_of(3), 0x44, admission(0x1000), t0));
  EXPECT_EQ(table.peers(), 2u);
  EXPECT_LE(table.request(gid_of(3), 0x44, 0, t0).count, UdAdmissions::kMaxPerPeer);
}

// ---- UD rate: a burst, then the class's rate times kRateMultiple ----

TEST(ProbeUdAdmissions, RequestsBeyondTheClassRateAreRateLimited) {
  UdAdmissions table;
  const auto t0 = Clock::time_point{} + 1h;
  const Gid g = gid_of(4);
  ASSERT_TRUE(table.admit(g, 0x55, admission(0x1, 0, 0, 10ms), t0));
  // A flood at one instant: the burst is answered, the rest is not.
  int answered = 0;
  for (int i = 0; i < 1000; ++i) {
    const auto a = table.request(g, 0x55, 0, t0);
    if (a.verdict == Verdict::answer) {
      ++answered;
    } else {
      EXPECT_EQ(a.verdict, Verdict::rate_limited);
      EXPECT_EQ(a.count, 0u);
    }
  }
  EXPECT_EQ(answered, static_cast<int>(UdAdmissions::kBurst));
  // One second later: kRateMultiple per 10 ms interval, 200 more at most.
  answered = 0;
  for (int i = 0; i < 1000; ++i) {
    if (table.request(g, 0x55, 0, t0 + 1s).verdict == Verdict::answer) ++answered;
  }
  EXPECT_EQ(answered, static_cast<int>(UdAdmissions::kBurst));  // refilled to the burst
  // A prober sending at its interval is always answered.
  auto t = t0 + 2s;
  for (int i = 0; i < 1000; ++i) {
    t += 10ms;
    EXPECT_EQ(table.request(g, 0x55, 0, t).verdict, Verdict::answer) << i;
  }
  // A steady flood gets kRateMultiple per interval.
  answered = 0;
  for (int i = 0; i < 10000; ++i) {
    t += 100us;
    if (table.request(g, 0x55, 0, t).verdict == Verdict::answer) ++answered;
  }
  // 1 s of flood: at most the burst plus 200.
  EXPECT_LE(answered, 200 + static_cast<int>(UdAdmissions::kBurst));
  EXPECT_GE(answered, 190);
}

TEST(ProbeUdAdmissions, EachAdmissionAddsItsRateNotTokensAndAFloodOfOneSpendsNoOneElses) {
  UdAdmissions table;
  const auto t0 = Clock::time_point{} + 1h;
  ASSERT_TRUE(table.admit(gid_of(5), 0x66, admission(0x1, 0, 0, 1s), t0));
  ASSERT_TRUE(table.admit(gid_of(5), 0x66, admission(0x1, 0, 0, 1s), t0));
  ASSERT_TRUE(table.admit(gid_of(6), 0x66, admission(0x2, 0, 0, 1s), t0));
  EXPECT_DOUBLE_EQ(table.reply_rate(gid_of(5), 0x66), 2 * UdAdmissions::kRateMultiple);
  EXPECT_DOUBLE_EQ(table.reply_rate(gid_of(6), 0x66), UdAdmissions::kRateMultiple);
  EXPECT_DOUBLE_EQ(table.reply_rate(gid_of(7), 0x66), 0);
  int answered = 0;
  for (int i = 0; i < 1000; ++i) {
    if (table.request(gid_of(5), 0x66, 0, t0).verdict == Verdict::answer) ++answered;
  }
  // One burst: admitting again refills nothing.
  EXPECT_EQ(answered, static_cast<int>(UdAdmissions::kBurst));
  // Two classes' rate: 4 a second.
  answered = 0;
  for (int i = 0; i < 1000; ++i) {
    if (table.request(gid_of(5), 0x66, 0, t0 + 1s).verdict == Verdict::answer) ++answered;
  }
  EXPECT_EQ(answered, 2 * UdAdmissions::kRateMultiple);
  // The other queue pair's budget is untouched.
  EXPECT_EQ(table.request(gid_of(6), 0x66, 0, t0).verdict, Verdict::answer);
}

// Admissions of one queue pair with other Q_Keys do not multiply what a
// request draws: every reply costs a token of the destination's bucket, the
// oldest admission's reply paid first.
TEST(ProbeUdAdmissions, EveryReplyCostsATokenOfItsDestination) {
  UdAdmissions table;
  const auto t0 = Clock::time_point{} + 1h;
  const Gid g = gid_of(10);
  for (uint32_t q = 1; q <= 3; ++q) ASSERT_TRUE(table.admit(g, 0x88, admission(q, 0, 0, 1s), t0));
  // One burst of 32 tokens (the later admissions add rate and room, not
  // tokens): 10 requests answered three times, the 11th twice, in
  // admission order.
  int replies = 0;
  std::vector<std::vector<Reply>> answered;
  for (int i = 0; i < 1000; ++i) {
    const auto a = table.request(g, 0x88, 0, t0);
    if (a.verdict != Verdict::answer) continue;
    replies += static_cast<int>(a.count);
    answered.push_back(replies_of(a));
  }
  EXPECT_EQ(replies, static_cast<int>(UdAdmissions::kBurst));
  ASSERT_EQ(answered.size(), 11u);
  EXPECT_EQ(answered.back(), (std::vector<Reply>{{1, 0}, {2, 0}}));
  // Half a second later: 3 tokens (three classes at 1 s, twice each, for
  // half a second), so one request's three replies, in admission order.
  const auto a = table.request(g, 0x88, 0, t0 + 500ms);
  ASSERT_EQ(a.verdict, Verdict::answer);
  EXPECT_EQ(replies_of(a), (std::vector<Reply>{{1, 0}, {2, 0}, {3, 0}}));
  // One token: only the oldest admission's reply.
  const auto b = table.request(g, 0x88, 0, t0 + 500ms + 167ms);
  ASSERT_EQ(b.verdict, Verdict::answer);
  EXPECT_EQ(replies_of(b), (std::vector<Reply>{{1, 0}}));
}

// What one admitted prober queue pair can draw at most: kMaxPerPeer
// admissions, each with its own Q_Key, each asking for 1 ms, flooded for
// 10 s. The responder counts every class at its floor (10 ms here, the
// default of probe.ud_min_interval), so the replies are bounded by
// kMaxPerPeer × kRateMultiple / floor a second plus the burst, however the
// requests come.
TEST(ProbeUdAdmissions, OneProberDrawsAtMostItsClassesAtTheFloor) {
  UdAdmissions table(10ms);
  const auto t0 = Clock::time_point{} + 1h;
  const Gid victim = gid_of(11);
  for (uint32_t q = 1; q <= UdAdmissions::kMaxPerPeer; ++q) {
    ASSERT_TRUE(table.admit(victim, 0x99, admission(q, 0, 0, 1ms), t0));
  }
  long replies = 0;
  auto t = t0;
  for (int i = 0; i < 1'000'000; ++i) {
    t += 10us;  // 100,000 requests a second for 10 s
    replies += static_cast<long>(table.request(victim, 0x99, 0, t).count);
  }
  const double per_second = UdAdmissions::kMaxPerPeer * UdAdmissions::kRateMultiple / 0.010;
  EXPECT_DOUBLE_EQ(table.reply_rate(victim, 0x99), per_second);  // 1,600
  EXPECT_LE(replies,
            static_cast<long>(per_second * 10 + UdAdmissions::kMaxPerPeer * UdAdmissions::kBurst));
  EXPECT_GE(replies, static_cast<long>(per_second * 10 * 0.99));
}

TEST(ProbeUdAdmissions, TheFastestClassStillHasABoundedRate) {
  UdAdmissions table;
  const auto t0 = Clock::time_point{} + 1h;
  ASSERT_TRUE(
      table.admit(gid_of(8), 0x77, admission(0x1, 0, 0, UdAdmissions::kFastestInterval), t0));
  int answered = 0;
  auto t = t0;
  for (int i = 0; i < 100000; ++i) {
    t += 10us;  // 100,000 requests a second for 1 s
    if (table.request(gid_of(8), 0x77, 0, t).verdict == Verdict::answer) ++answered;
  }
  EXPECT_LE(answered, UdAdmissions::kRateMultiple * 1000 + static_cast<int>(UdAdmissions::kBurst));
}

TEST(ProbeUdStats, RateLimitedDropsAndAddressHandlesAreExported) {
  ProbeStats stats;
  const Labels port = {{"device", "rxe0"}, {"port", "1"}};
  auto u = stats.ud_port(port);
  u->dropped(ud_drop::rate_limited);
  u->set_address_handles(12);
  const auto snap = rdma_exporter::testing::metrics_of(stats);
  EXPECT_EQ(rdma_exporter::testing::sample(snap, "rdma_probe_ud_dropped_total",
                                           {{"reason", "rate_limited"}}),
            1.0);
  EXPECT_EQ(rdma_exporter::testing::sample(snap, "rdma_probe_ud_address_handles", port), 12.0);
}

// ---- Address handles ----

// Fake handles: numbers, never dereferenced; destroying one records it.
struct Handles {
  std::vector<uintptr_t> destroyed;
  uintptr_t next = 0x1000;
  ibv_ah* make() { return reinterpret_cast<ibv_ah*>(next += 0x10); }  // NOLINT
  AddressHandles::Destroy destroy() {
    return [this](ibv_ah* h) { destroyed.push_back(reinterpret_cast<uintptr_t>(h)); };  // NOLINT
  }
  bool gone(ibv_ah* h) const {
    return std::count(destroyed.begin(), destroyed.end(), reinterpret_cast<uintptr_t>(h)) == 1;
  }
};

AddressHandles::Key key(uint8_t host, uint8_t tclass, uint8_t path) {
  return {gid_of(host), 0, tclass, 0, path_flow_label(path)};
}

TEST(ProbeUdAddressHandles, ADestinationHoldsAtMostItsCapLeastRecentlyUsedFirst) {
  Handles h;
  AddressHandles cache(4, 100, h.destroy());
  std::vector<ibv_ah*> made;
  // A sender rotating traffic class and path: 64 keys, one destination.
  for (uint8_t tc = 0; tc < 4; ++tc) {
    for (uint8_t path = 0; path < 16; ++path) {
      const auto k = key(1, tc, path);
      ASSERT_EQ(cache.find(k), nullptr);
      ibv_ah* ah = h.make();
      made.push_back(ah);
      cache.add(k, ah);
      EXPECT_LE(cache.of(gid_of(1), 0), 4u);
    }
  }
  EXPECT_EQ(cache.live(), 4u);
  EXPECT_EQ(cache.retired(), 0u);
  EXPECT_EQ(h.destroyed.size(), 60u);  // nothing in flight: destroyed at once
  // Another destination keeps its own.
  ibv_ah* other = h.make();
  cache.add(key(2, 0, 0), other);
  EXPECT_EQ(cache.find(key(2, 0, 0)), other);
  EXPECT_EQ(cache.live(), 5u);
  // A handle found is the most recently used: the next addition evicts another.
  ibv_ah* kept = cache.find(key(1, 3, 12));
  ASSERT_NE(kept, nullptr);
  cache.add(key(1, 0, 0), h.make());
  EXPECT_EQ(cache.find(key(1, 3, 12)), kept);
  EXPECT_EQ(cache.find(key(1, 3, 13)), nullptr);
}

TEST(ProbeUdAddressHandles, TheTotalIsBoundedToo) {
  Handles h;
  AddressHandles cache(8, 16, h.destroy());
  for (uint8_t host = 0; host < 100; ++host) cache.add(key(host, 0, 0), h.make());
  EXPECT_EQ(cache.live(), 16u);
  EXPECT_EQ(h.destroyed.size(), 84u);
}

TEST(ProbeUdAddressHandles, ARetiredHandleGoesWithItsOwnLastSend) {
  Handles h;
  AddressHandles cache(1, 100, h.destroy());
  ibv_ah* a = h.make();
  cache.add(key(1, 0, 0), a);
  cache.posted(a);
  cache.posted(a);
  // Another handle, used and kept busy the whole time: under the old rule
  // (retired handles destroyed once nothing at all is in flight) `a` would
  // wait for it.
  ibv_ah* busy = h.make();
  cache.add(key(2, 0, 0), busy);
  cache.posted(busy);
  // `a` is evicted while two sends use it: retired, not destroyed.
  ibv_ah* b = h.make();
  cache.add(key(1, 0, 1), b);
  EXPECT_FALSE(h.gone(a));
  EXPECT_EQ(cache.retired(), 1u);
  EXPECT_EQ(cache.find(key(1, 0, 0)), nullptr);
  cache.completed(a);
  EXPECT_FALSE(h.gone(a));
  cache.completed(a);
  EXPECT_TRUE(h.gone(a));  // its own sends are done, `busy`'s is not
  EXPECT_EQ(cache.retired(), 0u);
  // Completions of a handle gone, or never known, change nothing.
  cache.completed(a);
  cache.completed(nullptr);
  EXPECT_EQ(h.destroyed.size(), 1u);
  // Clearing destroys every handle, in flight or not, once.
  cache.clear();
  EXPECT_TRUE(h.gone(busy));
  EXPECT_TRUE(h.gone(b));
  EXPECT_EQ(cache.live(), 0u);
}

TEST(ProbeUdAddressHandles, TheDestructorDestroysLiveAndRetiredHandles) {
  Handles h;
  ibv_ah* a = h.make();
  ibv_ah* b = h.make();
  {
    AddressHandles cache(1, 100, h.destroy());
    cache.add(key(1, 0, 0), a);
    cache.posted(a);
    cache.add(key(1, 0, 1), b);  // a retired, still in flight
  }
  EXPECT_TRUE(h.gone(a));
  EXPECT_TRUE(h.gone(b));
}

// ---- The Q_Key ----

int no_random(unsigned char*, int) {
  return 0;
}
int all_ones(unsigned char* out, int n) {
  std::memset(out, 0xff, static_cast<std::size_t>(n));
  return 1;
}
int all_zeros(unsigned char* out, int n) {
  std::memset(out, 0, static_cast<std::size_t>(n));
  return 1;
}

// A scripted source of random bytes: each call gives the next number.
std::vector<uint32_t> g_script;
int scripted(unsigned char* out, int n) {
  if (g_script.empty() || n != 4) return 0;
  std::memcpy(out, &g_script.front(), 4);
  g_script.erase(g_script.begin());
  return 1;
}

TEST(ProbeUdSessionNumber, RandomNeverZeroAndNeverOneInUse) {
  const auto taken = [](uint32_t n) { return n == 0x5eed; };
  g_script = {0, 0x5eed, 0xc0ffee};
  EXPECT_EQ(choose_session_number(scripted, taken), 0xc0ffeeu);
  g_script = {0x12345678};
  EXPECT_EQ(choose_session_number(scripted, taken), 0x12345678u);
  // No random bytes, or nothing but numbers in use: none.
  EXPECT_EQ(choose_session_number(no_random, taken), std::nullopt);
  g_script = std::vector<uint32_t>(64, 0x5eed);
  EXPECT_EQ(choose_session_number(scripted, taken), std::nullopt);
  g_script.clear();
}

// A reply counts only from the queue pair, and the GID where the datagram
// has one, that the session was set up with.
TEST(ProbeUdReplies, OnlyTheSessionsResponderIsHeard) {
  const wire::UdPeer responder{0x1234, 0x11, 7, gid_of(20)};
  EXPECT_TRUE(from_responder(responder, gid_of(20), 0x1234));
  EXPECT_FALSE(from_responder(responder, gid_of(20), 0x1235));  // another queue pair
  EXPECT_FALSE(from_responder(responder, gid_of(20), 0x0234));
  EXPECT_FALSE(from_responder(responder, gid_of(21), 0x1234));  // another host
  Gid last_byte = gid_of(20);
  last_byte[0] ^= 0x80;
  EXPECT_FALSE(from_responder(responder, last_byte, 0x1234));
  // No GRH (InfiniBand within a subnet): the queue pair alone.
  EXPECT_TRUE(from_responder(responder, std::nullopt, 0x1234));
  EXPECT_FALSE(from_responder(responder, std::nullopt, 0x4321));
}

TEST(ProbeUdQkey, NoRandomBytesNoQkey) {
  const auto q = choose_qkey(no_random);
  ASSERT_FALSE(q);
  EXPECT_NE(q.error().message.find("RAND_bytes"), std::string::npos) << q.error().message;
  EXPECT_NE(q.error().code, 0);
}

TEST(ProbeUdQkey, RandomWithTheHighBitClearAndNeverZero) {
  ASSERT_TRUE(choose_qkey(all_ones));
  EXPECT_EQ(*choose_qkey(all_ones), 0x7fffffffu);
  ASSERT_TRUE(choose_qkey(all_zeros));
  EXPECT_EQ(*choose_qkey(all_zeros), 1u);
}

TEST(ProbeUdPaths, OnlyAClassesPathsAreAddressable) {
  // Every path a class may have (probe.classes[].flows: 1 to 16) has its
  // own flow label; a request naming another is dropped as malformed.
  std::set<uint32_t> labels;
  for (uint8_t p = 0; p < kMaxUdPaths; ++p) labels.insert(path_flow_label(p));
  EXPECT_EQ(labels.size(), std::size_t{kMaxUdPaths});
  EXPECT_EQ(kMaxUdPaths, 16);
}

}  // namespace
}  // namespace rdma_exporter::probe
