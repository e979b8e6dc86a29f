#pragma once

// The responder's end of the probe's control protocol, played on the test's
// event loop (loopback TCP, no verbs): it sends a hello listing one port,
// reads a prober's set-up, answers it as the test says, then reads
// keep-alives until the prober leaves or the test ends the session. For
// tests of the probers' state machines, which run on the same loop.

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exporter/probe/wire/protocol.hpp"

namespace rdma_exporter::testing {

class FakeResponder {
 public:
  using tcp = boost::asio::ip::tcp;
  // What to answer a set-up with; nothing closes the connection instead.
  using Answer = std::function<std::optional<probe::wire::Message>(const probe::wire::Message&)>;

  FakeResponder(boost::asio::io_context& io, probe::wire::PortAd port, Answer answer)
      : acceptor_(io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0)),
        port_(std::move(port)),
        answer_(std::move(answer)) {
    accept();
  }

  std::string address() const {
    return "127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }

  // The set-ups received, in order, one per session.
  const std::vector<probe::wire::Message>& setups() const { return setups_; }
  // Connections accepted.
  std::size_t connections() const { return connections_; }
  // Closes the open connections: the prober sees its responder leave.
  void end_sessions() {
    for (auto& c : open_) {
      if (auto s = c.lock()) {
        boost::system::error_code ignored;
        s->socket.close(ignored);
      }
    }
    open_.clear();
  }
  void stop() {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    end_sessions();
  }

 private:
  struct Connection {
    explicit Connection(tcp::socket s) : socket(std::move(s)) {}
    tcp::socket socket;
    std::array<uint8_t, probe::wire::kHeaderSize> header{};
    std::vector<uint8_t> payload;
    bool answered = false;
  };

  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket s) {
      if (ec) return;
      ++connections_;
      auto c = std::make_shared<Connection>(std::move(s));
      open_.push_back(c);
      probe::wire::Hello hello;
      hello.nonce.fill(0x5a);
      hello.ports = {port_};
      write(c, probe::wire::encode(hello));
      read(c);
      accept();
    });
  }

  // Each write owns its bytes until it completes.
  static void write(const std::shared_ptr<Connection>& c, std::vector<uint8_t> bytes) {
    auto out = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
    boost::asio::async_write(c->socket, boost::asio::buffer(*out),
                             [c, out](boost::system::error_code, std::size_t) {});
  }

  void read(const std::shared_ptr<Connection>& c) {
    boost::asio::async_read(
        c->socket, boost::asio::buffer(c->header),
        [this, c](boost::system::error_code ec, std::size_t) {
          if (ec) return;
          auto h = probe::wire::decode_header(c->header);
          if (!h) return close(c);
          c->payload.assign(h->length, 0);
          boost::asio::async_read(
              c->socket, boost::asio::buffer(c->payload),
              [this, c, type = h->type](boost::system::error_code ec2, std::size_t) {
                if (ec2) return;
                auto m = probe::wire::decode_payload(type, c->payload);
                if (!m) return close(c);
                if (!c->answered) {
                  c->answered = true;
                  setups_.push_back(*m);
                  auto answer = answer_(*m);
                  if (!answer) return close(c);
                  write(c, probe::wire::encode(*answer));
                }
                read(c);
              });
        });
  }

  static void close(const std::shared_ptr<Connection>& c) {
    boost::system::error_code ignored;
    c->socket.close(ignored);
  }

  tcp::acceptor acceptor_;
  const probe::wire::PortAd port_;
  const Answer answer_;
  std::vector<probe::wire::Message> setups_;
  std::vector<std::weak_ptr<Connection>> open_;
  std::size_t connections_ = 0;
};

}  // namespace rdma_exporter::testing
