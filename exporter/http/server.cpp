#include "exporter/http/server.hpp"

#include <sys/socket.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "common/address.hpp"
#include "common/errno_text.hpp"
#include "common/log.hpp"
#include "exporter/http/session.hpp"

namespace rdma_exporter {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

HttpServer::HttpServer(asio::io_context& io, const Config::Web& config, SnapshotCache& cache,
                       std::shared_ptr<const WebSecurity> security)
    : io_(io), cache_(cache), state_(std::make_shared<HttpServerState>()) {
  state_->config = config;
  update_security(std::move(security));
  update_routes();
}

// Checks in progress are abandoned: their connections are released here, on
// this thread, before the event loop they post to goes away. Connections
// released later (with the event loop, after a forced shutdown) must not
// call a `drained` whose owner is gone.
HttpServer::~HttpServer() {
  state_->drained = nullptr;
  if (verifier_) {
    verifier_->stop();
    verifier_->join();
  }
  state_->verifier = nullptr;
}

void HttpServer::update_security(std::shared_ptr<const WebSecurity> security) {
  if (!security) security = std::make_shared<const WebSecurity>();
  if (security->auth && !verifier_) {
    verifier_ = std::make_unique<asio::thread_pool>(1);
    state_->verifier = verifier_.get();
  }
  const auto& rate = security->rate_limit;
  if (rate.interval.count() <= 0) {
    state_->limiter = nullptr;
  } else if (!state_->limiter || state_->limiter->interval() != rate.interval ||
             state_->limiter->burst() != rate.burst) {
    state_->limiter = std::make_shared<RateLimiter>(rate.interval, rate.burst);
  }
  state_->security = std::move(security);
}

void HttpServer::update_config(const Config::Web& config) {
  const auto listen = state_->config.listen_addresses;
  state_->config = config;
  state_->config.listen_addresses = listen;
  update_routes();
}

void HttpServer::set_reload_hook(ReloadHook hook) {
  reload_ = std::move(hook);
  update_routes();
}

void HttpServer::update_routes() {
  state_->routes = exporter_routes(cache_, state_->config.enable_lifecycle ? reload_ : nullptr,
                                   state_->config.telemetry_path);
}

Status HttpServer::start() {
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
  for (const auto& address : state_->config.listen_addresses) {
    auto acceptor = std::make_unique<tcp::acceptor>(io_);
    if (Status s = open_listener(*acceptor, address); !s) return s;
    acceptors.push_back(std::move(acceptor));
  }
  if (acceptors.empty()) return Error{EINVAL, "no listen address"};
  acceptors_ = std::move(acceptors);
  for (auto& a : acceptors_) accept(*a);
  return ok_status();
}

Status HttpServer::start(const std::vector<int>& listening_fds) {
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
  for (std::size_t i = 0; i < listening_fds.size(); ++i) {
    const int fd = listening_fds[i];
    sockaddr_storage addr{};
    socklen_t length = sizeof addr;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
      return Error{errno, "socket " + std::to_string(i + 1) + " (fd " + std::to_string(fd) +
                              "): " + errno_text(errno)};
    }
    if (addr.ss_family != AF_INET && addr.ss_family != AF_INET6) {
      return Error{EINVAL, "socket " + std::to_string(i + 1) + " (fd " + std::to_string(fd) +
                               ") is not a TCP socket (use ListenStream=[address:]port)"};
    }
    auto acceptor = std::make_unique<tcp::acceptor>(io_);
    boost::system::error_code ec;
    acceptor->assign(addr.ss_family == AF_INET ? tcp::v4() : tcp::v6(), fd, ec);
    if (ec) {
      return Error{ec.value(), "socket " + std::to_string(i + 1) + " (fd " + std::to_string(fd) +
                                   "): " + ec.message()};
    }
    acceptors.push_back(std::move(acceptor));
  }
  if (acceptors.empty()) return Error{EINVAL, "no listening socket"};
  acceptors_ = std::move(acceptors);
  for (auto& a : acceptors_) accept(*a);
  return ok_status();
}

tcp::endpoint HttpServer::local_endpoint() const {
  boost::system::error_code ec;
  return acceptors_.empty() ? tcp::endpoint() : acceptors_.front()->local_endpoint(ec);
}

std::vector<tcp::endpoint> HttpServer::local_endpoints() const {
  std::vector<tcp::endpoint> out;
  for (const auto& a : acceptors_) {
    boost::system::error_code ec;
    out.push_back(a->local_endpoint(ec));
  }
  return out;
}

void HttpServer::accept(tcp::acceptor& acceptor) {
  acceptor.async_accept(
      [this, &acceptor, state = state_](boost::system::error_code ec, tcp::socket socket) {
        if (state->stopping || !acceptor.is_open()) return;
        if (ec) {
          // Out of file descriptors and the like: back off instead of spinning.
          log::warn("accept failed", {{"err", ec.message()}});
          auto timer = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(100));
          timer->async_wait([this, &acceptor, state, timer](boost::system::error_code) {
            if (!state->stopping) accept(acceptor);
          });
          return;
        }
        on_accept(std::move(socket));
        accept(acceptor);
      });
}

// A connection that gets no place is closed at once: with a 503 over plain
// HTTP; over TLS a plain-text answer would only confuse the client.
void HttpServer::refuse(tcp::socket& socket, const char* reason) {
  state_->stats->count_rejected_connection(reason);
  static constexpr std::string_view kBusy =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  boost::system::error_code ignored;
  if (!state_->security->tls) {
    socket.non_blocking(true, ignored);
    socket.write_some(asio::buffer(kBusy.data(), kBusy.size()), ignored);
  }
  socket.close(ignored);
}

// At web.max_connections_per_source, the source's connection that has
// waited longest for a request (or is closing) is evicted to make room; at
// web.max_connections, the first of any source's. Only when every
// connection it could replace is serving a request is the new one refused
// (HttpConnectionSlots::admit).
void HttpServer::on_accept(tcp::socket socket) {
  boost::system::error_code ec;
  const tcp::endpoint peer = socket.remote_endpoint(ec);
  if (ec) return;  // gone already
  const auto source = peer.address();
  const auto& config = state_->config;
  const auto admission =
      state_->slots.admit(source, config.max_connections, config.max_connections_per_source);
  switch (admission.verdict) {
    case HttpConnectionSlots::Verdict::max_connections_per_source:
      return refuse(socket, "max_connections_per_source");
    case HttpConnectionSlots::Verdict::max_connections:
      return refuse(socket, "max_connections");
    case HttpConnectionSlots::Verdict::admitted:
      break;
  }
  if (admission.evict) admission.evict->evict();
  start_session(state_, state_->security, std::move(socket), source);
}

void HttpServer::stop(std::function<void()> drained) {
  if (state_->stopping) return;
  state_->stopping = true;
  state_->drained = std::move(drained);
  boost::system::error_code ignored;
  for (auto& a : acceptors_) a->close(ignored);
  for (const auto& weak : state_->sessions) {
    if (auto s = weak.lock()) s->close_if_idle();
  }
  if (state_->open == 0 && state_->drained) {
    asio::post(io_, std::exchange(state_->drained, nullptr));
  }
}

}  // namespace rdma_exporter
