#include "exporter/snapshot_cache.hpp"

#include <boost/asio/post.hpp>

namespace rdma_exporter {

SnapshotCache::SnapshotCache(boost::asio::io_context& io, Collection& collection, Duration max_age)
    : io_(io), collection_(collection), max_age_(max_age) {}

SnapshotCache::~SnapshotCache() {
  worker_.join();
}

void SnapshotCache::get(Handler handler) {
  if (last_ && std::chrono::steady_clock::now() - last_->taken < max_age_) {
    boost::asio::post(io_, [h = std::move(handler), s = last_] { h(s); });
    return;
  }
  waiting_.push_back(std::move(handler));
  if (!busy_) start_collection();
}

void SnapshotCache::start_collection() {
  busy_.emplace(io_.get_executor());
  boost::asio::post(worker_, [this] {
    auto snapshot = collection_.collect();
    boost::asio::post(io_, [this, snapshot] {
      last_ = snapshot;
      busy_.reset();
      auto handlers = std::move(waiting_);
      waiting_.clear();
      for (auto& h : handlers) h(snapshot);
    });
  });
}

}  // namespace rdma_exporter
