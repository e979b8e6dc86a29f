#include "common/background_reader.hpp"

#include <boost/asio/post.hpp>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>

namespace rdma_exporter {

struct BackgroundReader::Shared {
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::function<Completion()>> jobs;
  boost::asio::io_context* io = nullptr;  // not used once stopped
  bool stopped = false;
  bool busy = false;  // a read is running
};

BackgroundReader::BackgroundReader(boost::asio::io_context& io)
    : shared_(std::make_shared<Shared>()) {
  shared_->io = &io;
  // The thread holds the shared state: it may outlive this object.
  thread_ = std::thread(work, shared_);
}

BackgroundReader::~BackgroundReader() {
  stop();
}

void BackgroundReader::submit(std::function<Completion()> job) {
  {
    std::lock_guard lock(shared_->mutex);
    if (shared_->stopped) return;
    shared_->jobs.push_back(std::move(job));
  }
  shared_->wake.notify_one();
}

void BackgroundReader::stop() {
  std::deque<std::function<Completion()>> dropped;
  bool busy = false;
  {
    std::lock_guard lock(shared_->mutex);
    shared_->stopped = true;
    dropped.swap(shared_->jobs);
    busy = shared_->busy;
  }
  shared_->wake.notify_one();
  if (!thread_.joinable()) return;
  // An idle thread ends at once; a busy one ends after its read, alone.
  if (busy) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

void BackgroundReader::work(const std::shared_ptr<Shared>& shared) {
  std::unique_lock lock(shared->mutex);
  for (;;) {
    shared->wake.wait(lock, [&] { return shared->stopped || !shared->jobs.empty(); });
    if (shared->stopped) return;
    auto job = std::move(shared->jobs.front());
    shared->jobs.pop_front();
    shared->busy = true;
    lock.unlock();
    Completion complete;
    try {
      complete = job();
    } catch (...) {
      complete = [error = std::current_exception()] { std::rethrow_exception(error); };
    }
    job = nullptr;
    lock.lock();
    shared->busy = false;
    // Under the lock: stop() either comes first, and nothing is posted, or
    // returns after the post.
    if (shared->stopped) return;
    boost::asio::post(*shared->io, std::move(complete));
  }
}

}  // namespace rdma_exporter
