#pragma once

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <memory>
#include <vector>

#include "collectors/probe/protocol.hpp"
#include "common/result.hpp"

namespace rdma_exporter::probe {

// Error codes that say the peer spoke badly rather than the network failed.
bool is_protocol_error(const Error& e);

// A TCP connection carrying control messages, one read and one write at a
// time. Handlers run on the socket's executor. Make it with make_shared.
// Each operation holds the channel alive until its handler has run (with
// ECANCELED after close()).
class ControlChannel : public std::enable_shared_from_this<ControlChannel> {
 public:
  explicit ControlChannel(boost::asio::ip::tcp::socket socket) : socket_(std::move(socket)) {}

  boost::asio::ip::tcp::socket& socket() { return socket_; }

  // One whole message, or the error that ended the connection.
  void read(std::function<void(Result<wire::Message>)> handler);
  void write(const wire::Message& message, std::function<void(Status)> handler);
  void close();

 private:
  boost::asio::ip::tcp::socket socket_;
  std::array<uint8_t, wire::kHeaderSize> header_{};
  std::vector<uint8_t> payload_;
  std::vector<uint8_t> out_;
};

Error network_error(const boost::system::error_code& ec, const std::string& what);

}  // namespace rdma_exporter::probe
