#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <optional>
#include <utility>

namespace rdma_exporter::probe {

// A descriptor libibverbs owns (a completion channel's, a device context's
// asynchronous events), watched on an Asio loop. reset() and the destructor
// cancel the waits and hand the descriptor back without closing it:
// libibverbs closes it with its object, so destroy this first.
class BorrowedFd {
 public:
  BorrowedFd() = default;
  BorrowedFd(boost::asio::io_context& io, int fd) { emplace(io, fd); }
  ~BorrowedFd() { reset(); }
  BorrowedFd(BorrowedFd&& other) noexcept : d_(std::move(other.d_)) { other.d_.reset(); }
  BorrowedFd& operator=(BorrowedFd&& other) noexcept {
    if (this != &other) {
      reset();
      d_ = std::move(other.d_);
      other.d_.reset();
    }
    return *this;
  }
  BorrowedFd(const BorrowedFd&) = delete;
  BorrowedFd& operator=(const BorrowedFd&) = delete;

  void emplace(boost::asio::io_context& io, int fd) {
    reset();
    d_.emplace(io, fd);
  }
  void reset() {
    if (!d_) return;
    boost::system::error_code ignored;
    d_->cancel(ignored);
    d_->release();
    d_.reset();
  }
  explicit operator bool() const { return d_.has_value(); }
  boost::asio::posix::stream_descriptor* operator->() { return &*d_; }

 private:
  std::optional<boost::asio::posix::stream_descriptor> d_;
};

}  // namespace rdma_exporter::probe
