// exporter/http/connection_slots: the places connections hold (overall and
// per address), their release, and the eviction order, without sockets.

#include "exporter/http/connection_slots.hpp"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "exporter/http/server_state.hpp"

namespace rdma_exporter {
namespace {

using boost::asio::ip::make_address;
using Verdict = HttpConnectionSlots::Verdict;

const auto kPeerA = make_address("192.0.2.1");
const auto kPeerB = make_address("192.0.2.2");
const auto kPeerC = make_address("2001:db8::7");

// A connection as the server sees it: evicting it gives its place back, as
// a session does.
struct Connection : HttpSessionBase {
  HttpConnectionSlot slot;
  int evictions = 0;
  void close_if_idle() override {}
  void evict() override {
    ++evictions;
    slot.release();
  }
};

// The eviction order, front first, emptying it.
std::vector<HttpSessionBase*> evict_all(HttpConnectionSlots& slots) {
  std::vector<HttpSessionBase*> order;
  while (HttpSessionBase* next = slots.next_to_evict()) {
    order.push_back(next);
    next->evict();
  }
  return order;
}

TEST(HttpConnectionSlots, AcquiringCountsOverallAndPerAddress) {
  HttpConnectionSlots slots;
  Connection c1, c2, c3;
  c1.slot = slots.acquire(kPeerA, &c1);
  c2.slot = slots.acquire(kPeerA, &c2);
  c3.slot = slots.acquire(kPeerC, &c3);
  EXPECT_TRUE(c1.slot.held());
  EXPECT_EQ(slots.held(), 3);
  EXPECT_EQ(slots.held(kPeerA), 2);
  EXPECT_EQ(slots.held(kPeerB), 0);
  EXPECT_EQ(slots.held(kPeerC), 1);
  // A slot acquired is not in the eviction order until it waits.
  EXPECT_EQ(slots.next_to_evict(), nullptr);
}

TEST(HttpConnectionSlots, DestroyingASlotGivesItsPlaceBack) {
  HttpConnectionSlots slots;
  Connection c1;
  c1.slot = slots.acquire(kPeerA, &c1);
  {
    Connection c2;
    c2.slot = slots.acquire(kPeerA, &c2);
    c2.slot.queue();
    EXPECT_EQ(slots.held(), 2);
    EXPECT_EQ(slots.held(kPeerA), 2);
    EXPECT_EQ(slots.next_to_evict(), &c2);
  }
  EXPECT_EQ(slots.held(), 1);
  EXPECT_EQ(slots.held(kPeerA), 1);
  EXPECT_EQ(slots.next_to_evict(), nullptr);  // it left the order too
  c1.slot = HttpConnectionSlot();             // assigning over a slot releases it
  EXPECT_EQ(slots.held(), 0);
  EXPECT_EQ(slots.held(kPeerA), 0);
}

TEST(HttpConnectionSlots, ReleasedExactlyOnce) {
  HttpConnectionSlots slots;
  Connection keep;
  keep.slot = slots.acquire(kPeerA, &keep);
  {
    HttpConnectionSlot s = slots.acquire(kPeerA, nullptr);
    s.queue();
    s.release();
    EXPECT_FALSE(s.held());
    EXPECT_EQ(slots.held(), 1);
    EXPECT_EQ(slots.held(kPeerA), 1);
    s.release();  // again: nothing
    // A released slot ignores the order.
    s.queue();
    s.queue_first();
    EXPECT_EQ(slots.next_to_evict(), nullptr);
  }  // destroyed: nothing more
  EXPECT_EQ(slots.held(), 1);
  EXPECT_EQ(slots.held(kPeerA), 1);
}

TEST(HttpConnectionSlots, AMovedSlotIsReleasedOnceByItsNewHolder) {
  HttpConnectionSlots slots;
  Connection c;
  {
    HttpConnectionSlot first = slots.acquire(kPeerB, &c);
    first.queue();
    HttpConnectionSlot second(std::move(first));
    EXPECT_FALSE(first.held());  // NOLINT(bugprone-use-after-move): moved-from holds nothing
    EXPECT_TRUE(second.held());
    first.release();
    EXPECT_EQ(slots.held(kPeerB), 1);
    EXPECT_EQ(slots.next_to_evict(), &c);  // keeps its rank
    c.slot = std::move(second);
  }
  EXPECT_EQ(slots.held(), 1);
  EXPECT_EQ(slots.held(kPeerB), 1);
  c.slot.release();
  EXPECT_EQ(slots.held(), 0);
}

TEST(HttpConnectionSlots, TheOneWaitingLongestForItsRequestIsEvictedFirst) {
  HttpConnectionSlots slots;
  Connection c1, c2, c3, c4;
  for (Connection* c : {&c1, &c2, &c3, &c4}) c->slot = slots.acquire(kPeerA, c);
  c3.slot.queue();
  c1.slot.queue();
  c4.slot.queue();
  c2.slot.queue();
  c3.slot.queue();  // waiting still: keeps its rank (a TLS handshake, then its first request)
  EXPECT_EQ(slots.next_to_evict(), &c3);
  // c3's request arrives and is served; it waits again afterwards: last.
  c3.slot.unqueue();
  c3.slot.queue();
  EXPECT_EQ(evict_all(slots), (std::vector<HttpSessionBase*>{&c1, &c4, &c2, &c3}));
  EXPECT_EQ(slots.held(), 0);
  EXPECT_EQ(c1.evictions, 1);
  EXPECT_EQ(c3.evictions, 1);
}

TEST(HttpConnectionSlots, ClosingConnectionsGoFirst) {
  HttpConnectionSlots slots;
  Connection w1, w2, k1, k2;
  for (Connection* c : {&w1, &w2, &k1, &k2}) c->slot = slots.acquire(kPeerB, c);
  w1.slot.queue();
  k1.slot.queue();  // was waiting, then answered and closing
  w2.slot.queue();
  k1.slot.queue_first();
  k2.slot.queue_first();  // closing after k1: the front
  EXPECT_EQ(evict_all(slots), (std::vector<HttpSessionBase*>{&k2, &k1, &w1, &w2}));
}

TEST(HttpConnectionSlots, AConnectionServingARequestIsNeverEvicted) {
  HttpConnectionSlots slots;
  Connection serving, waiting;
  serving.slot = slots.acquire(kPeerA, &serving);
  waiting.slot = slots.acquire(kPeerA, &waiting);
  serving.slot.queue();
  waiting.slot.queue();
  serving.slot.unqueue();  // its request arrived
  EXPECT_EQ(evict_all(slots), (std::vector<HttpSessionBase*>{&waiting}));
  EXPECT_EQ(serving.evictions, 0);
  EXPECT_TRUE(serving.slot.held());
  serving.slot.unqueue();  // again: nothing
  EXPECT_EQ(slots.next_to_evict(), nullptr);
}

TEST(HttpConnectionSlots, AtTheAddressCapTheAddresssLongestWaitingMakesRoom) {
  HttpConnectionSlots slots;
  const int kMax = 100;
  const int kPerSource = 3;
  Connection other, a1, a2, a3;
  other.slot = slots.acquire(kPeerB, &other);
  for (Connection* c : {&a1, &a2, &a3}) c->slot = slots.acquire(kPeerA, c);
  other.slot.queue();  // another address's, waiting longest of all: not taken
  a2.slot.queue();
  a3.slot.queue();
  // a1 serves a request; a2 has waited longest of kPeerA's.
  auto a = slots.admit(kPeerA, kMax, kPerSource);
  EXPECT_EQ(a.verdict, Verdict::admitted);
  EXPECT_EQ(a.evict, &a2);
  a2.evict();
  EXPECT_EQ(slots.held(kPeerA), 2);
  EXPECT_EQ(slots.admit(kPeerA, kMax, kPerSource).evict, nullptr);  // under the cap again
  // Closing goes first, as at the overall cap.
  Connection a4;
  a4.slot = slots.acquire(kPeerA, &a4);
  a4.slot.queue_first();
  EXPECT_EQ(slots.admit(kPeerA, kMax, kPerSource).evict, &a4);
  EXPECT_EQ(other.evictions, 0);
  EXPECT_EQ(a1.evictions, 0);
}

TEST(HttpConnectionSlots, AdmissionAtTheCaps) {
  HttpConnectionSlots slots;
  const int kMax = 4;
  const int kPerSource = 2;
  Connection a1, a2, b1, c1;
  EXPECT_EQ(slots.admit(kPeerA, kMax, kPerSource).verdict, Verdict::admitted);
  a1.slot = slots.acquire(kPeerA, &a1);
  a2.slot = slots.acquire(kPeerA, &a2);
  b1.slot = slots.acquire(kPeerB, &b1);
  // Under both caps: admitted, nobody evicted.
  auto b = slots.admit(kPeerB, kMax, kPerSource);
  EXPECT_EQ(b.verdict, Verdict::admitted);
  EXPECT_EQ(b.evict, nullptr);
  // kPeerA holds its two, both serving a request: refused.
  auto a = slots.admit(kPeerA, kMax, kPerSource);
  EXPECT_EQ(a.verdict, Verdict::max_connections_per_source);
  EXPECT_EQ(a.evict, nullptr);
  // b1 waits for its request; kPeerA's connections still serve theirs: kPeerA is
  // refused still (nobody else's place is taken for it).
  b1.slot.queue();
  EXPECT_EQ(slots.admit(kPeerA, kMax, kPerSource).verdict, Verdict::max_connections_per_source);
  b1.slot.unqueue();
  // a1 waits for its request: kPeerA's next connection takes a1's place.
  a1.slot.queue();
  a = slots.admit(kPeerA, kMax, kPerSource);
  EXPECT_EQ(a.verdict, Verdict::admitted);
  EXPECT_EQ(a.evict, &a1);

  c1.slot = slots.acquire(kPeerC, &c1);  // four: the cap
  // At the cap with a connection waiting: admitted in its place.
  auto c = slots.admit(kPeerC, kMax, kPerSource);
  EXPECT_EQ(c.verdict, Verdict::admitted);
  EXPECT_EQ(c.evict, &a1);
  // At both caps: the address's own waiting connection makes room.
  EXPECT_EQ(slots.admit(kPeerA, kMax, kPerSource).evict, &a1);
  // Every connection serving a request: refused, at either cap.
  a1.slot.unqueue();
  auto full = slots.admit(kPeerB, kMax, kPerSource);
  EXPECT_EQ(full.verdict, Verdict::max_connections);
  EXPECT_EQ(full.evict, nullptr);
  EXPECT_EQ(slots.admit(kPeerA, kMax, kPerSource).verdict, Verdict::max_connections_per_source);
  // One gone: room again.
  b1.slot.release();
  EXPECT_EQ(slots.admit(kPeerB, kMax, kPerSource).verdict, Verdict::admitted);
  EXPECT_EQ(slots.admit(kPeerB, kMax, kPerSource).evict, nullptr);
}

// Places are counted per source group (common/address.hpp): an IPv6 host
// can use any address of its /64, so the /64 is one source; an IPv4-mapped
// address is its IPv4 address.
TEST(HttpConnectionSlots, AnIPv6SlashSixtyFourIsOneSource) {
  HttpConnectionSlots slots;
  const int kMax = 100;
  const int kPerSource = 2;
  const auto v6a = make_address("2001:db8:1:2::1");
  const auto v6b = make_address("2001:db8:1:2:aaaa:bbbb:cccc:dddd");
  const auto v6c = make_address("2001:db8:1:2::3");
  Connection c1, c2, v4;
  c1.slot = slots.acquire(v6a, &c1);
  c2.slot = slots.acquire(v6b, &c2);
  EXPECT_EQ(slots.held(v6c), 2);
  // Both serving a request: a third address of the /64 is refused.
  EXPECT_EQ(slots.admit(v6c, kMax, kPerSource).verdict, Verdict::max_connections_per_source);
  EXPECT_EQ(slots.admit(make_address("2001:db8:1:3::1"), kMax, kPerSource).verdict,
            Verdict::admitted);  // the next /64
  // One waits for its request: the /64's newcomer takes its place.
  c2.slot.queue();
  auto a = slots.admit(v6c, kMax, kPerSource);
  EXPECT_EQ(a.verdict, Verdict::admitted);
  EXPECT_EQ(a.evict, &c2);
  // IPv4 through an IPv4-mapped IPv6 address: one source with its IPv4 form.
  v4.slot = slots.acquire(make_address("::ffff:192.0.2.1"), &v4);
  EXPECT_EQ(slots.held(kPeerA), 1);
}

}  // namespace
}  // namespace rdma_exporter
