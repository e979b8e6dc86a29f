#pragma once

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "common/result.hpp"
#include "exporter/probe/wire/protocol.hpp"

namespace rdma_exporter::probe {

// Error codes that say the peer spoke badly rather than the network failed.
bool is_protocol_error(const Error& e);

// Messages a channel holds that the peer has not taken yet, the one being
// sent included. A peer that stops reading fills its receive buffer and the
// kernel's send buffer first; past those and this many messages, the
// channel is closed.
inline constexpr std::size_t kMaxQueuedWrites = 8;

// A TCP connection carrying control messages: one read at a time, and
// writes queued so that one is on the socket at a time, each message's
// bytes kept until it is sent. Handlers run on the socket's executor, never
// inside the call that started the operation. Make it with make_shared.
// Each operation holds the channel alive until its handler has run (with
// ECANCELED after close()).
class ControlChannel : public std::enable_shared_from_this<ControlChannel> {
 public:
  explicit ControlChannel(boost::asio::ip::tcp::socket socket) : socket_(std::move(socket)) {}

  boost::asio::ip::tcp::socket& socket() { return socket_; }

  // One whole message, or the error that ended the connection. A read
  // started while another is under way fails with EBUSY.
  void read(std::function<void(Result<wire::Message>)> handler);
  // Queues a message; the handler runs once it is sent or failed. A write
  // that finds kMaxQueuedWrites messages unsent fails with ENOBUFS and
  // closes the channel: the peer does not read.
  void write(const wire::Message& message, std::function<void(Status)> handler);
  void close();
  bool closed() const { return closed_; }
  // Messages written and not yet sent.
  std::size_t queued() const { return queue_.size(); }

 private:
  struct Outgoing {
    std::vector<uint8_t> bytes;
    std::function<void(Status)> handler;
  };
  void send_front();
  // Runs `handler` with `status` on the executor, not inside the caller.
  void post(std::function<void(Status)> handler, Status status);

  boost::asio::ip::tcp::socket socket_;
  std::array<uint8_t, wire::kHeaderSize> header_{};
  std::vector<uint8_t> payload_;
  std::deque<Outgoing> queue_;  // the front is on the socket
  bool reading_ = false;
  bool closed_ = false;
};

// A session's life after its set-up: answers every keep-alive and reads the
// next, until the connection ends, the peer sends anything else, or the
// answers back up (the peer does not read). `alive` runs at each
// keep-alive; `ended` once, with why.
enum class KeepaliveEnd : uint8_t {
  closed,    // the connection ended
  protocol,  // a malformed or unexpected message
  backlog,   // the answers back up
};
void serve_keepalives(const std::shared_ptr<ControlChannel>& channel, std::function<void()> alive,
                      std::function<void(KeepaliveEnd why)> ended);

Error network_error(const boost::system::error_code& ec, const std::string& what);

// A connected socket's own address (local) or its peer's (remote), as a
// set-up names the address the prober dialled; zero if the socket has none.
enum class Side { local, remote };
wire::Dialled dialled_of(const boost::asio::ip::tcp::socket& socket, Side side);

}  // namespace rdma_exporter::probe
