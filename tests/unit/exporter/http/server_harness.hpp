#pragma once

// What the HTTP server unit tests drive it with: a blocking socket client
// and a server on 127.0.0.1 with its own event loop.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "exporter/formats/text.hpp"
#include "exporter/http/server.hpp"
#include "exporter/snapshot_cache.hpp"

namespace rdma_exporter::testing {

// A blocking client socket, from `source` (any address of 127/8, all of it
// loopback on Linux). Reads give up after 5 s so a server that never
// answers fails the test instead of hanging it.
class Client {
 public:
  // `to`: the server's address.
  explicit Client(unsigned short port, const char* source = "127.0.0.1",
                  const char* to = "127.0.0.1") {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(fd_, 0);
    timeval limit{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    EXPECT_EQ(::inet_pton(AF_INET, source, &from.sin_addr), 1) << source;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof from), 0)
        << std::strerror(errno);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    EXPECT_EQ(::inet_pton(AF_INET, to, &addr.sin_addr), 1) << to;
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0)
        << std::strerror(errno);
  }
  ~Client() { ::close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // A fixed, small send buffer: what the client sends beyond it and the
  // server's receive buffer waits until the server reads it.
  void limit_send_buffer(int bytes) {
    EXPECT_EQ(::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes), 0);
  }

  void send(const std::string& bytes) {
    EXPECT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }

  // One response: the header, then Content-Length bytes of body (none after
  // HEAD). "" when the server closes first.
  std::string response(bool head = false) {
    std::size_t end;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return std::exchange(buffer_, {});
    }
    end += 4;
    std::size_t length = 0;
    const auto at = buffer_.find("Content-Length: ");
    if (!head && at != std::string::npos && at < end) length = std::stoul(buffer_.substr(at + 16));
    while (buffer_.size() < end + length) {
      if (!fill()) break;
    }
    std::string out = buffer_.substr(0, end + length);
    buffer_.erase(0, out.size());
    return out;
  }

  // Everything until the server closes the connection.
  std::string until_closed() {
    while (fill()) {
    }
    return std::exchange(buffer_, {});
  }

 private:
  // false at end of stream; a timeout fails the test.
  bool fill() {
    char chunk[4096];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0) {
      ADD_FAILURE() << "no answer from the server: " << std::strerror(errno);
      return false;
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return n > 0;
  }

  int fd_ = -1;
  std::string buffer_;
};

inline std::string request(const std::string& method, const std::string& path,
                           const std::string& headers = "") {
  return method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers + "\r\n";
}

// An HttpServer on an ephemeral port with its event loop on its own thread.
// Collections give "rdma_up 1\n", whose stand-in gzip form is "<gzip>".
class Server {
 public:
  explicit Server(Config::Web web, std::shared_ptr<const WebSecurity> security = nullptr,
                  HttpServer::ReloadHook reload = nullptr)
      : cache_(
            io_, [this] { return collect(); }, std::chrono::hours(1)),
        server_(io_, with_ephemeral_port(std::move(web)), cache_, std::move(security)) {
    if (reload) server_.set_reload_hook(std::move(reload));
    const Status started = server_.start();
    EXPECT_TRUE(started) << (started ? "" : started.error().message);
    port_ = server_.local_endpoint().port();
    thread_ = std::thread([this] { io_.run(); });
  }
  // Clients must be closed first: the server drains, then the loop ends.
  ~Server() {
    boost::asio::post(io_, [this] { server_.stop([this] { io_.stop(); }); });
    thread_.join();
  }

  unsigned short port() const { return port_; }
  // Every listener's port, in the order of web.listen_addresses.
  std::vector<unsigned short> ports() const {
    std::vector<unsigned short> out;
    for (const auto& ep : server_.local_endpoints()) out.push_back(ep.port());
    return out;
  }
  int collections() const { return collections_; }

  // Runs `f` on the server's event loop.
  void post(std::function<void()> f) { boost::asio::post(io_, std::move(f)); }

  // The server's own metrics, rendered.
  std::string stats() const {
    MetricSink sink;
    server_.stats()->add_metrics(sink);
    return render_text(sink.take());
  }

 private:
  static Config::Web with_ephemeral_port(Config::Web web) {
    // The default (:10910) becomes an ephemeral port; addresses a test
    // gives stay.
    if (web.listen_addresses == std::vector<std::string>{kDefaultListenAddress}) {
      web.listen_addresses = {"127.0.0.1:0"};
    }
    return web;
  }
  std::shared_ptr<const Snapshot> collect() {
    ++collections_;
    auto s = std::make_shared<Snapshot>();
    s->taken = std::chrono::steady_clock::now();
    s->text = "rdma_up 1\n";
    s->gzip = "<gzip>";
    return s;
  }

  boost::asio::io_context io_;
  std::atomic<int> collections_{0};
  SnapshotCache cache_;
  HttpServer server_;
  unsigned short port_ = 0;
  std::thread thread_;
};

inline std::string get_once(unsigned short port, const std::string& req, bool head = false) {
  Client c(port);
  c.send(req);
  return c.response(head);
}

}  // namespace rdma_exporter::testing
