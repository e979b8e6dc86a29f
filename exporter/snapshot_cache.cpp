#include "exporter/snapshot_cache.hpp"

#include <boost/asio/post.hpp>
#include <future>
#include <utility>

namespace rdma_exporter {

SnapshotCache::SnapshotCache(boost::asio::io_context& io, Collection& collection, Duration max_age)
    : SnapshotCache(
          io, [&collection] { return collection.collect(); }, max_age) {
  collection_ = &collection;
}

SnapshotCache::SnapshotCache(boost::asio::io_context& io, Collect collect, Duration max_age,
                             Clock now)
    : io_(io), collect_(std::move(collect)), now_(std::move(now)), max_age_(max_age) {
  if (!now_) now_ = [] { return std::chrono::steady_clock::now(); };
}

SnapshotCache::~SnapshotCache() {
  worker_.join();
}

void SnapshotCache::get(Handler handler) {
  if (last_ && last_generation_ == generation_ && now_() - last_->taken < max_age_) {
    boost::asio::post(io_, [h = std::move(handler), s = last_] { h(s); });
    return;
  }
  if (busy_ && busy_generation_ != generation_) {
    waiting_next_.push_back(std::move(handler));
    return;
  }
  waiting_.push_back(std::move(handler));
  if (!busy_) start_collection();
}

void SnapshotCache::when_first_collected(std::function<void()> handler) {
  if (last_) {
    boost::asio::post(io_, std::move(handler));
    return;
  }
  first_waiting_.push_back(std::move(handler));
}

void SnapshotCache::start_collection() {
  busy_.emplace(io_.get_executor());
  busy_generation_ = generation_;
  boost::asio::post(worker_, [this] {
    auto snapshot = collect_();
    boost::asio::post(io_, [this, snapshot] {
      last_ = snapshot;
      last_generation_ = busy_generation_;
      busy_.reset();
      auto handlers = std::move(waiting_);
      waiting_.clear();
      if (!waiting_next_.empty()) {
        waiting_ = std::move(waiting_next_);
        waiting_next_.clear();
        start_collection();
      }
      auto first = std::move(first_waiting_);
      first_waiting_.clear();
      for (auto& f : first) f();
      for (auto& h : handlers) h(snapshot);
    });
  });
}

void SnapshotCache::run_exclusive(std::function<void(Collection&)> job,
                                  std::function<void()> done) {
  auto guard =
      std::make_shared<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>(
          io_.get_executor());
  boost::asio::post(worker_, [this, job = std::move(job), done = std::move(done), guard] {
    job(*collection_);
    boost::asio::post(io_, [done, guard] {
      if (done) done();
    });
  });
}

void SnapshotCache::start_maintenance(Duration period) {
  if (maintenance_timer_) maintenance_timer_->cancel();
  maintenance_period_ = period;
  if (period.count() <= 0) {
    maintenance_timer_.reset();
    return;
  }
  maintenance_timer_ = std::make_unique<boost::asio::steady_timer>(io_);
  boost::asio::post(worker_, [this] { collection_->maintain(); });
  schedule_maintenance();
}

void SnapshotCache::schedule_maintenance() {
  maintenance_timer_->expires_after(maintenance_period_);
  maintenance_timer_->async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    boost::asio::post(worker_, [this] { collection_->maintain(); });
    schedule_maintenance();
  });
}

void SnapshotCache::stop(const std::function<void(Collection&)>& last) {
  if (maintenance_timer_) maintenance_timer_->cancel();
  if (!last) return;
  std::promise<void> done;
  boost::asio::post(worker_, [&] {
    last(*collection_);
    done.set_value();
  });
  done.get_future().wait();
}

}  // namespace rdma_exporter
