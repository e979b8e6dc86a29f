#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "exporter/collection.hpp"
#include "exporter/config.hpp"

namespace rdma_exporter {

// Single-flight access to collections for the event loop: concurrent
// requests share one in-flight collection, and a result younger than
// max_age is served again. Collections run on a worker thread, never on the
// thread that serves HTTP. get() and its handlers run on the io_context.
class SnapshotCache {
 public:
  using Handler = std::function<void(std::shared_ptr<const Snapshot>)>;

  SnapshotCache(boost::asio::io_context& io, Collection& collection, Duration max_age);
  ~SnapshotCache();
  SnapshotCache(const SnapshotCache&) = delete;
  SnapshotCache& operator=(const SnapshotCache&) = delete;

  void get(Handler handler);

 private:
  void start_collection();

  boost::asio::io_context& io_;
  Collection& collection_;
  Duration max_age_;
  boost::asio::thread_pool worker_{1};
  std::shared_ptr<const Snapshot> last_;
  std::vector<Handler> waiting_;
  // Keeps the event loop alive while a collection is in flight.
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> busy_;
};

}  // namespace rdma_exporter
