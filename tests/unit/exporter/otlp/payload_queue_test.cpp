// exporter/otlp/payload_queue: the bound, which payload a full queue drops,
// and that only the payload sent leaves it.

#include "exporter/otlp/payload_queue.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rdma_exporter {
namespace {

using Payload = OtlpPayloadQueue::Payload;

Payload payload(const std::string& text) {
  return std::make_shared<const std::string>(text);
}

// The queue's payloads, oldest first, emptying it.
std::vector<std::string> drain(OtlpPayloadQueue& q) {
  std::vector<std::string> out;
  while (auto p = q.front()) {
    out.push_back(*p);
    q.pop(p);
  }
  return out;
}

TEST(OtlpPayloadQueue, EmptyHasNothingToSend) {
  OtlpPayloadQueue q(4);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.size(), 0u);
  EXPECT_EQ(q.front(), nullptr);
  EXPECT_EQ(q.dropped(), 0u);
  q.pop(nullptr);  // nothing to remove
  EXPECT_TRUE(q.empty());
}

TEST(OtlpPayloadQueue, SendsOldestFirstUpToItsCapacity) {
  OtlpPayloadQueue q(3);
  EXPECT_EQ(q.capacity(), 3u);
  EXPECT_FALSE(q.push(payload("p1")));
  EXPECT_FALSE(q.push(payload("p2")));
  EXPECT_FALSE(q.push(payload("p3")));
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q.dropped(), 0u);
  EXPECT_EQ(*q.front(), "p1");
  EXPECT_EQ(drain(q), (std::vector<std::string>{"p1", "p2", "p3"}));
}

TEST(OtlpPayloadQueue, AFullQueueDropsTheOldest) {
  OtlpPayloadQueue q(3);
  for (const char* p : {"p1", "p2", "p3"}) q.push(payload(p));
  EXPECT_TRUE(q.push(payload("p4")));
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q.dropped(), 1u);
  EXPECT_EQ(*q.front(), "p2");
  EXPECT_TRUE(q.push(payload("p5")));
  EXPECT_TRUE(q.push(payload("p6")));
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q.dropped(), 3u);
  EXPECT_EQ(drain(q), (std::vector<std::string>{"p4", "p5", "p6"}));
  // Payloads sent are not dropped ones.
  EXPECT_EQ(q.dropped(), 3u);
  EXPECT_FALSE(q.push(payload("p7")));
}

TEST(OtlpPayloadQueue, CapacityOfOneKeepsTheNewest) {
  OtlpPayloadQueue q(1);
  EXPECT_FALSE(q.push(payload("p1")));
  EXPECT_TRUE(q.push(payload("p2")));
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(*q.front(), "p2");
  EXPECT_EQ(q.dropped(), 1u);
  // 0 is taken as 1, never as "unbounded" or "nothing kept".
  OtlpPayloadQueue zero(0);
  EXPECT_EQ(zero.capacity(), 1u);
  EXPECT_FALSE(zero.push(payload("z1")));
  EXPECT_TRUE(zero.push(payload("z2")));
  EXPECT_EQ(*zero.front(), "z2");
}

TEST(OtlpPayloadQueue, OnlyThePayloadSentLeaves) {
  // The payload being sent was pushed out meanwhile: the new oldest stays.
  OtlpPayloadQueue q(2);
  q.push(payload("p1"));
  q.push(payload("p2"));
  const Payload sending = q.front();
  q.push(payload("p3"));
  EXPECT_EQ(q.dropped(), 1u);
  q.pop(sending);
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(*q.front(), "p2");
  // The same text in another payload is another payload.
  q.pop(payload("p2"));
  EXPECT_EQ(q.size(), 2u);
  q.pop(q.front());
  EXPECT_EQ(drain(q), (std::vector<std::string>{"p3"}));
}

TEST(OtlpPayloadQueue, ClearDiscardsWithoutCountingDrops) {
  OtlpPayloadQueue q(2);
  q.push(payload("p1"));
  q.push(payload("p2"));
  q.push(payload("p3"));
  q.clear();
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.front(), nullptr);
  EXPECT_EQ(q.dropped(), 1u);
}

}  // namespace
}  // namespace rdma_exporter
