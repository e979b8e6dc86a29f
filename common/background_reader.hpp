#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>

namespace rdma_exporter {

// Runs blocking reads (files) on a thread of its own, one at a time in the
// order asked, and hands each result back to an event loop, so that a slow
// or stuck file never holds up the loop. Stopping never waits for a read in
// progress: the thread finishes it alone and its result is dropped.
class BackgroundReader {
 public:
  explicit BackgroundReader(boost::asio::io_context& io);
  ~BackgroundReader();
  BackgroundReader(const BackgroundReader&) = delete;
  BackgroundReader& operator=(const BackgroundReader&) = delete;

  // Runs `read()` on the reader's thread, then `done(result)` on the loop.
  // An exception from `read` is thrown again on the loop. Both must be
  // copyable; `read` must not touch what the loop owns.
  template <typename Read, typename Done>
  void run(Read read, Done done) {
    using Value = std::invoke_result_t<Read&>;
    submit([read = std::move(read), done = std::move(done)]() mutable -> Completion {
      auto value = std::make_shared<Value>(read());
      return [done = std::move(done), value] { done(std::move(*value)); };
    });
  }

  // From then on, nothing reaches the loop and new reads are not run. Does
  // not wait for a read in progress. Not from the reader's thread.
  void stop();

 private:
  using Completion = std::function<void()>;
  struct Shared;
  void submit(std::function<Completion()> job);
  static void work(const std::shared_ptr<Shared>& shared);

  std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

}  // namespace rdma_exporter
