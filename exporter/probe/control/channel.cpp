#include "exporter/probe/control/channel.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <utility>

namespace rdma_exporter::probe {

bool is_protocol_error(const Error& e) {
  return e.code == EPROTO || e.code == EPROTONOSUPPORT;
}

Error network_error(const boost::system::error_code& ec, const std::string& what) {
  if (ec == boost::asio::error::eof) return Error{ECONNRESET, what + ": connection closed by peer"};
  if (ec == boost::asio::error::operation_aborted) return Error{ECANCELED, what + ": cancelled"};
  if (ec.category() == boost::system::system_category()) return Error::system(ec.value(), what);
  return Error{EIO, what + ": " + ec.message()};
}

wire::Dialled dialled_of(const boost::asio::ip::tcp::socket& socket, Side side) {
  boost::system::error_code ec;
  const auto endpoint =
      side == Side::local ? socket.local_endpoint(ec) : socket.remote_endpoint(ec);
  if (ec) return {};
  wire::Dialled d;
  const auto address = endpoint.address();
  d.address =
      address.is_v4()
          ? boost::asio::ip::make_address_v6(boost::asio::ip::v4_mapped, address.to_v4()).to_bytes()
          : address.to_v6().to_bytes();
  d.port = endpoint.port();
  return d;
}

void ControlChannel::read(std::function<void(Result<wire::Message>)> handler) {
  if (reading_) {
    boost::asio::post(socket_.get_executor(), [self = shared_from_this(), handler]() {
      handler(Error{EBUSY, "control connection: a read is already under way"});
    });
    return;
  }
  reading_ = true;
  boost::asio::async_read(
      socket_, boost::asio::buffer(header_),
      [this, self = shared_from_this(), handler = std::move(handler)](
          const boost::system::error_code& ec, std::size_t) {
        if (ec) {
          reading_ = false;
          return handler(network_error(ec, "control connection"));
        }
        auto header = wire::decode_header(header_);
        if (!header) {
          reading_ = false;
          return handler(header.error());
        }
        payload_.assign(header->length, 0);
        const wire::Type type = header->type;
        boost::asio::async_read(
            socket_, boost::asio::buffer(payload_),
            [this, self, type, handler](const boost::system::error_code& ec2, std::size_t) {
              reading_ = false;
              if (ec2) return handler(network_error(ec2, "control connection"));
              handler(wire::decode_payload(type, payload_));
            });
      });
}

void ControlChannel::post(std::function<void(Status)> handler, Status status) {
  boost::asio::post(socket_.get_executor(),
                    [self = shared_from_this(), handler = std::move(handler),
                     status = std::move(status)]() { handler(status); });
}

void ControlChannel::write(const wire::Message& message, std::function<void(Status)> handler) {
  if (closed_) return post(std::move(handler), Error{ECANCELED, "control connection: closed"});
  if (queue_.size() >= kMaxQueuedWrites) {
    post(std::move(handler),
         Error{ENOBUFS, "control connection: the peer does not read (" +
                            std::to_string(queue_.size()) + " messages unsent)"});
    return close();
  }
  queue_.push_back(Outgoing{wire::encode(message), std::move(handler)});
  if (queue_.size() == 1) send_front();
}

void ControlChannel::send_front() {
  boost::asio::async_write(
      socket_, boost::asio::buffer(queue_.front().bytes),
      [this, self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
        Outgoing done = std::move(queue_.front());
        queue_.pop_front();
        if (ec || closed_) {
          const Error error = ec ? network_error(ec, "control connection")
                                 : Error{ECANCELED, "control connection: closed"};
          std::deque<Outgoing> rest;
          rest.swap(queue_);
          if (done.handler) done.handler(error);
          for (auto& o : rest) {
            if (o.handler) o.handler(error);
          }
          return;
        }
        // The next message goes on the socket before the handler runs, so a
        // handler that writes again only queues.
        if (!queue_.empty()) send_front();
        done.handler(ok_status());
      });
}

void ControlChannel::close() {
  closed_ = true;
  // The handlers of unsent messages run now, with ECANCELED, and the channel
  // keeps no handler: one that holds its owner (a session holds the
  // channel) would otherwise keep both alive if the event loop stops before
  // the aborted write completes. The bytes of the message on the socket stay
  // until its write completes.
  for (auto& o : queue_) {
    if (o.handler)
      post(std::exchange(o.handler, nullptr), Error{ECANCELED, "control connection: closed"});
  }
  boost::system::error_code ignored;
  socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

namespace {

struct KeepaliveLoop {
  std::shared_ptr<ControlChannel> channel;
  std::function<void()> alive;
  std::function<void(KeepaliveEnd)> ended;  // empty once called

  void finish(KeepaliveEnd why) {
    if (!ended) return;
    auto f = std::move(ended);
    ended = nullptr;
    f(why);
  }
};

void next_keepalive(const std::shared_ptr<KeepaliveLoop>& loop) {
  loop->channel->read([loop](Result<wire::Message> m) {
    if (!loop->ended) return;
    if (m && std::holds_alternative<wire::Keepalive>(m.value())) {
      loop->channel->write(wire::Keepalive{}, [loop](const Status& s) {
        if (!s)
          loop->finish(s.error().code == ENOBUFS ? KeepaliveEnd::backlog : KeepaliveEnd::closed);
      });
      if (loop->channel->closed()) return loop->finish(KeepaliveEnd::backlog);
      loop->alive();
      if (!loop->ended) return;
      return next_keepalive(loop);
    }
    if (!m && !is_protocol_error(m.error())) return loop->finish(KeepaliveEnd::closed);
    loop->finish(KeepaliveEnd::protocol);
  });
}

}  // namespace

void serve_keepalives(const std::shared_ptr<ControlChannel>& channel, std::function<void()> alive,
                      std::function<void(KeepaliveEnd why)> ended) {
  next_keepalive(
      std::make_shared<KeepaliveLoop>(KeepaliveLoop{channel, std::move(alive), std::move(ended)}));
}

}  // namespace rdma_exporter::probe
