#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <memory>
#include <vector>

#include "common/result.hpp"
#include "exporter/config.hpp"
#include "exporter/http/handlers.hpp"
#include "exporter/http/server_state.hpp"
#include "exporter/http/stats.hpp"
#include "exporter/http/web_security.hpp"
#include "exporter/snapshot_cache.hpp"

namespace rdma_exporter {

// The HTTP endpoint (Boost.Beast): the exporter's routes (handlers.hpp)
// over plain TCP or TLS, with optional basic auth (web_security.hpp).
// It listens on every address of web.listen_address, or on sockets it is
// handed (systemd socket activation), one acceptor each on the same event
// loop; the limits below are over all of them.
// Bounded in every dimension a client controls: TLS handshake time, request
// size, time to send a request and its headers, idle keep-alive time, time
// to take a response, and the number of open connections, in all and from
// one client address. A client cannot hold every place: at the connection
// cap the connection that has waited longest for a request is closed for a
// new one.
class HttpServer {
 public:
  using ReloadHook = rdma_exporter::ReloadHook;

  HttpServer(boost::asio::io_context& io, const Config::Web& config, SnapshotCache& cache,
             std::shared_ptr<const WebSecurity> security = nullptr);
  ~HttpServer();

  // Binds every listen address and starts accepting; the error names the
  // address that could not be bound, and none is left open then.
  Status start();
  // Accepts on listening TCP sockets opened by someone else (systemd socket
  // activation) instead of binding; takes ownership of the descriptors.
  Status start(const std::vector<int>& listening_fds);
  // The first listener's address, and every listener's.
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  std::vector<boost::asio::ip::tcp::endpoint> local_endpoints() const;

  // Stops accepting, closes idle connections, and lets requests and
  // responses in flight finish; calls `drained` once the last connection
  // has closed.
  void stop(std::function<void()> drained = nullptr);

  bool stopping() const { return state_->stopping; }

  // Takes new limits, timeouts and telemetry path (reload); the listen
  // addresses stay.
  void update_config(const Config::Web& config);

  // New TLS context, users and headers for connections accepted from now on
  // (reload); open connections keep the ones they started with. The rate
  // limit applies to every request from now on; an unchanged one keeps its
  // tokens.
  void update_security(std::shared_ptr<const WebSecurity> security);
  bool serves_tls() const { return state_->security->tls != nullptr; }

  // What POST /-/reload runs when web.enable_lifecycle is on.
  void set_reload_hook(ReloadHook hook);
  std::shared_ptr<HttpStats> stats() const { return state_->stats; }

 private:
  void accept(boost::asio::ip::tcp::acceptor& acceptor);
  void on_accept(boost::asio::ip::tcp::socket socket);
  // Closes a connection given no place, counted under `reason`.
  void refuse(boost::asio::ip::tcp::socket& socket, const char* reason);
  // The routes for the current configuration and reload hook.
  void update_routes();

  boost::asio::io_context& io_;
  SnapshotCache& cache_;
  ReloadHook reload_;
  std::shared_ptr<HttpServerState> state_;
  // unique_ptr: an acceptor's address stays put while it accepts.
  std::vector<std::unique_ptr<boost::asio::ip::tcp::acceptor>> acceptors_;
  std::unique_ptr<boost::asio::thread_pool> verifier_;
};

}  // namespace rdma_exporter
