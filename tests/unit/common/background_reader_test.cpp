// common/background_reader: reads run on the reader's thread, one at a time
// in the order asked, their results come back on the loop, and stopping
// neither waits for a read in progress nor lets its result through.

#include "common/background_reader.hpp"

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/support/run_until.hpp"
#include "tests/support/wait.hpp"

namespace rdma_exporter {
namespace {

using rdma_exporter::testing::eventually;
using rdma_exporter::testing::run_until;

TEST(BackgroundReader, ReadsOffTheLoopAndAnswersOnIt) {
  boost::asio::io_context io;
  BackgroundReader reader(io);
  std::thread::id read_on;
  std::thread::id answered_on;
  int got = 0;
  reader.run(
      [&read_on] {
        read_on = std::this_thread::get_id();
        return 42;
      },
      [&](int value) {
        answered_on = std::this_thread::get_id();
        got = value;
      });
  auto busy = boost::asio::make_work_guard(io);
  run_until(io, [&] { return got != 0; });
  EXPECT_EQ(got, 42);
  EXPECT_NE(read_on, std::this_thread::get_id());
  EXPECT_EQ(answered_on, std::this_thread::get_id());
}

TEST(BackgroundReader, ResultsComeBackInTheOrderAsked) {
  boost::asio::io_context io;
  BackgroundReader reader(io);
  std::vector<int> got;
  for (int i = 1; i <= 5; ++i) {
    reader.run([i] { return i; }, [&got](int value) { got.push_back(value); });
  }
  auto busy = boost::asio::make_work_guard(io);
  run_until(io, [&] { return got.size() == 5; });
  EXPECT_EQ(got, (std::vector<int>{1, 2, 3, 4, 5}));
}

TEST(BackgroundReader, AnExceptionOfAReadIsThrownOnTheLoop) {
  boost::asio::io_context io;
  BackgroundReader reader(io);
  reader.run([]() -> int { throw std::runtime_error("unreadable"); }, [](int) {});
  auto busy = boost::asio::make_work_guard(io);
  EXPECT_THROW(io.run_for(std::chrono::seconds(20)), std::runtime_error);
}

// A read that never ends (a file on a hung file system) must not hold up
// stop(), and what it returns later never reaches the loop.
TEST(BackgroundReader, StopLeavesAReadInProgressAndDropsItsResult) {
  boost::asio::io_context io;
  auto reader = std::make_unique<BackgroundReader>(io);
  std::promise<void> started;
  std::promise<void> release;
  auto released = release.get_future().share();
  bool answered = false;
  bool queued_read = false;
  // Held by what would take the result: expires once the reader's thread
  // has let go of it, without handing it to the loop.
  auto held = std::make_shared<int>(0);
  std::weak_ptr<int> watch = held;
  reader->run(
      [&started, released] {
        started.set_value();
        released.wait();
        return 1;
      },
      [&answered, held](int) { answered = true; });
  reader->run(
      [&queued_read] {
        queued_read = true;
        return 2;
      },
      [&answered](int) { answered = true; });
  held.reset();
  started.get_future().wait();

  auto stopping = std::async(std::launch::async, [&] { reader->stop(); });
  const bool stopped = stopping.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  release.set_value();
  stopping.wait();
  EXPECT_TRUE(stopped) << "stop() waited for the read in progress";
  reader.reset();

  ASSERT_TRUE(eventually([&] { return watch.expired(); }));
  io.restart();
  io.poll();
  EXPECT_FALSE(answered);
  EXPECT_FALSE(queued_read);
}

TEST(BackgroundReader, NothingRunsAfterStop) {
  boost::asio::io_context io;
  BackgroundReader reader(io);
  reader.stop();
  bool read = false;
  reader.run(
      [&read] {
        read = true;
        return 0;
      },
      [](int) {});
  reader.stop();
  io.poll();
  EXPECT_FALSE(read);
}

}  // namespace
}  // namespace rdma_exporter
