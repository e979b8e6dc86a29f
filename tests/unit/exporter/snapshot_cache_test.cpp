// The single-flight snapshot cache: reuse of young results, sharing of an
// in-flight collection. Collections are a stand-in that counts its calls;
// time is a clock the test sets.

#include "exporter/snapshot_cache.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <vector>

namespace rdma_exporter {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A collection that stamps its snapshot with the test's clock and numbers it.
class FakeCollections {
 public:
  explicit FakeCollections(const Clock::time_point& now) : now_(now) {}

  std::shared_ptr<const Snapshot> operator()() {
    auto s = std::make_shared<Snapshot>();
    s->taken = now_;
    s->text = "collection " + std::to_string(++count_) + "\n";
    return s;
  }
  int count() const { return count_; }

 private:
  const Clock::time_point& now_;
  std::atomic<int> count_{0};
};

class SnapshotCacheTest : public ::testing::Test {
 protected:
  // One get, run to its answer: the event loop runs until the handler has
  // been called and nothing is left to do.
  std::string get(SnapshotCache& cache) {
    std::string text;
    cache.get([&](std::shared_ptr<const Snapshot> s) { text = s->text; });
    io_.restart();
    io_.run();
    return text;
  }

  // A cache whose first collection, once started, is held until
  // release_first() while the test asks for more.
  std::unique_ptr<SnapshotCache> cache_holding_the_first(Duration max_age) {
    return std::make_unique<SnapshotCache>(
        io_,
        [this] {
          if (!told_.exchange(true)) started_.set_value();
          released_.wait();
          return collections_();
        },
        max_age, [this] { return now_; });
  }
  void wait_for_the_first() { started_.get_future().wait(); }
  void release_first() { release_.set_value(); }

  boost::asio::io_context io_;
  Clock::time_point now_ = Clock::time_point{} + 1000h;
  FakeCollections collections_{now_};

 private:
  std::promise<void> release_;
  std::shared_future<void> released_ = release_.get_future().share();
  std::promise<void> started_;
  std::atomic<bool> told_{false};
};

TEST_F(SnapshotCacheTest, AResultYoungerThanMaxAgeIsServedAgain) {
  SnapshotCache cache(
      io_, [this] { return collections_(); }, 10s, [this] { return now_; });
  EXPECT_EQ(get(cache), "collection 1\n");
  now_ += 10s - 1ns;  // the youngest age that is not yet max_age
  EXPECT_EQ(get(cache), "collection 1\n");
  EXPECT_EQ(collections_.count(), 1);
}

TEST_F(SnapshotCacheTest, AResultAsOldAsMaxAgeIsCollectedAgain) {
  SnapshotCache cache(
      io_, [this] { return collections_(); }, 10s, [this] { return now_; });
  EXPECT_EQ(get(cache), "collection 1\n");
  now_ += 10s;
  EXPECT_EQ(get(cache), "collection 2\n");
  now_ += 1h;
  EXPECT_EQ(get(cache), "collection 3\n");
  EXPECT_EQ(collections_.count(), 3);
}

TEST_F(SnapshotCacheTest, MaxAgeZeroCollectsEveryTime) {
  SnapshotCache cache(
      io_, [this] { return collections_(); }, 0s, [this] { return now_; });
  EXPECT_EQ(get(cache), "collection 1\n");
  EXPECT_EQ(get(cache), "collection 2\n");
  EXPECT_EQ(collections_.count(), 2);
}

TEST_F(SnapshotCacheTest, ANewMaxAgeAppliesToTheNextGet) {
  SnapshotCache cache(
      io_, [this] { return collections_(); }, 0s, [this] { return now_; });
  EXPECT_EQ(get(cache), "collection 1\n");
  cache.set_max_age(5s);
  now_ += 4s;
  EXPECT_EQ(get(cache), "collection 1\n");
  EXPECT_EQ(collections_.count(), 1);
}

TEST_F(SnapshotCacheTest, ConcurrentGetsShareOneCollectionInFlight) {
  const auto cache = cache_holding_the_first(0s);
  std::vector<std::shared_ptr<const Snapshot>> answers;
  auto record = [&](std::shared_ptr<const Snapshot> s) { answers.push_back(std::move(s)); };
  cache->get(record);
  wait_for_the_first();  // the collection is running now
  cache->get(record);
  cache->get(record);
  release_first();
  io_.run();

  ASSERT_EQ(answers.size(), 3u);
  EXPECT_EQ(answers[0]->text, "collection 1\n");
  EXPECT_EQ(answers[1], answers[0]);
  EXPECT_EQ(answers[2], answers[0]);
  EXPECT_EQ(collections_.count(), 1);
}

TEST_F(SnapshotCacheTest, AfterInvalidateAGetWaitsForACollectionThatStartsLater) {
  const auto held = cache_holding_the_first(10s);
  SnapshotCache& cache = *held;
  std::vector<std::string> before;
  std::vector<std::string> after;
  cache.get([&](std::shared_ptr<const Snapshot> s) { before.push_back(s->text); });
  wait_for_the_first();  // collection 1 is in flight
  cache.get([&](std::shared_ptr<const Snapshot> s) { before.push_back(s->text); });
  cache.invalidate();
  cache.get([&](std::shared_ptr<const Snapshot> s) { after.push_back(s->text); });
  cache.get([&](std::shared_ptr<const Snapshot> s) { after.push_back(s->text); });
  release_first();
  io_.run();

  // Those who asked before share collection 1; those after share collection
  // 2, which started when 1 ended.
  EXPECT_EQ(before, (std::vector<std::string>{"collection 1\n", "collection 1\n"}));
  EXPECT_EQ(after, (std::vector<std::string>{"collection 2\n", "collection 2\n"}));
  EXPECT_EQ(collections_.count(), 2);
  // Collection 2 is young and of the current state: served again.
  EXPECT_EQ(get(cache), "collection 2\n");
  // A stored result, however young, is not served after invalidate().
  cache.invalidate();
  EXPECT_EQ(get(cache), "collection 3\n");
}

TEST_F(SnapshotCacheTest, AGetAfterTheSharedCollectionStartsAnotherWhenStale) {
  SnapshotCache cache(
      io_, [this] { return collections_(); }, 0s, [this] { return now_; });
  std::vector<std::string> texts;
  cache.get([&](std::shared_ptr<const Snapshot> s) {
    texts.push_back(s->text);
    // Asked from a handler of the finished collection: that one is no longer
    // in flight, and with max_age 0 it is stale.
    cache.get([&](std::shared_ptr<const Snapshot> t) { texts.push_back(t->text); });
  });
  io_.run();
  EXPECT_EQ(texts, (std::vector<std::string>{"collection 1\n", "collection 2\n"}));
}

TEST_F(SnapshotCacheTest, TheFirstCollectionIsAnnouncedWhoeverAskedForIt) {
  SnapshotCache cache(
      io_, [this] { return collections_(); }, 0s, [this] { return now_; });
  int announced = 0;
  std::string seen;
  cache.when_first_collected([&] {
    ++announced;
    // Announced once the collection is stored: a get now is answered by it.
    cache.get([&](std::shared_ptr<const Snapshot> s) { seen = s->text; });
  });
  io_.run();
  EXPECT_EQ(announced, 0);  // it starts no collection itself
  EXPECT_EQ(collections_.count(), 0);

  // Another party (the OTLP pusher, a scrape) asks for the first collection.
  EXPECT_EQ(get(cache), "collection 1\n");
  EXPECT_EQ(announced, 1);
  EXPECT_EQ(seen, "collection 2\n");  // max_age 0: the announcement's own get collects
  EXPECT_EQ(get(cache), "collection 3\n");
  EXPECT_EQ(announced, 1);  // once, not per collection
}

TEST_F(SnapshotCacheTest, AnAnnouncementAskedForAfterTheFirstCollectionComesAtOnce) {
  SnapshotCache cache(
      io_, [this] { return collections_(); }, 10s, [this] { return now_; });
  EXPECT_EQ(get(cache), "collection 1\n");
  int announced = 0;
  cache.when_first_collected([&] { ++announced; });
  EXPECT_EQ(announced, 0);  // posted, not called inside
  io_.restart();
  io_.run();
  EXPECT_EQ(announced, 1);
  EXPECT_EQ(collections_.count(), 1);
}

TEST_F(SnapshotCacheTest, EveryAnnouncementWaitingForTheFirstCollectionIsMade) {
  SnapshotCache cache(
      io_, [this] { return collections_(); }, 10s, [this] { return now_; });
  std::vector<int> order;
  cache.when_first_collected([&] { order.push_back(1); });
  cache.when_first_collected([&] { order.push_back(2); });
  EXPECT_EQ(get(cache), "collection 1\n");
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

}  // namespace
}  // namespace rdma_exporter
