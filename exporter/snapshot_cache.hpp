#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstdint>
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
  // One collection: Collection::collect in the daemon, a stand-in in tests.
  using Collect = std::function<std::shared_ptr<const Snapshot>()>;
  // What a snapshot's age is measured against (Snapshot::taken).
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  SnapshotCache(boost::asio::io_context& io, Collection& collection, Duration max_age);
  // Collects with `collect` and measures age with `now` (steady_clock when
  // null). Without a Collection there is no kernel work: only get() and
  // set_max_age() may be used.
  SnapshotCache(boost::asio::io_context& io, Collect collect, Duration max_age,
                Clock now = nullptr);
  ~SnapshotCache();
  SnapshotCache(const SnapshotCache&) = delete;
  SnapshotCache& operator=(const SnapshotCache&) = delete;

  void get(Handler handler);

  // Runs `handler` on the event loop once the first collection is done,
  // whoever asked for it (a scrape, the OTLP pusher, the daemon itself); at
  // once (posted) when one is done already. It starts no collection.
  void when_first_collected(std::function<void()> handler);

  // Runs the collection's kernel maintenance now and then every `period`, on
  // the collecting thread (so never at the same time as a collection).
  // Calling it again changes the period; a zero period stops it.
  void start_maintenance(Duration period);

  // Runs `job` on the collecting thread (between collections), then `done`
  // on the event loop.
  void run_exclusive(std::function<void(Collection&)> job, std::function<void()> done);

  void set_max_age(Duration max_age) { max_age_ = max_age; }

  // What collections show has changed (a reload's outcome): a get() from
  // now on is answered by a collection that starts after this call, never
  // by the stored result or by the one in flight (whose earlier askers
  // still get it).
  void invalidate() { ++generation_; }
  // Stops the maintenance timer; then runs `last` on the collecting thread
  // and waits for it (used to restore kernel state on exit).
  void stop(const std::function<void(Collection&)>& last);

 private:
  void start_collection();

  boost::asio::io_context& io_;
  Collection* collection_ = nullptr;  // null: built from a bare Collect
  Collect collect_;
  Clock now_;
  Duration max_age_;
  boost::asio::thread_pool worker_{1};
  std::shared_ptr<const Snapshot> last_;
  std::vector<Handler> waiting_;
  // Asked after invalidate() while an older collection was in flight: they
  // get the collection that starts when it ends.
  std::vector<Handler> waiting_next_;
  std::uint64_t generation_ = 0;                      // bumped by invalidate()
  std::uint64_t busy_generation_ = 0;                 // of the collection in flight
  std::uint64_t last_generation_ = 0;                 // of last_
  std::vector<std::function<void()>> first_waiting_;  // until last_ is set
  // Keeps the event loop alive while a collection is in flight.
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> busy_;
  std::unique_ptr<boost::asio::steady_timer> maintenance_timer_;
  Duration maintenance_period_{};
  void schedule_maintenance();
};

}  // namespace rdma_exporter
