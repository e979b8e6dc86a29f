#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "common/metric_sink.hpp"
#include "common/result.hpp"
#include "exporter/config.hpp"
#include "exporter/http/web_security.hpp"
#include "exporter/snapshot_cache.hpp"

namespace rdma_exporter {

// A connection, over plain TCP or TLS (http_server.cpp).
class HttpSessionBase {
 public:
  virtual ~HttpSessionBase() = default;
  // On shutdown: close now unless a request or response is in flight.
  virtual void close_if_idle() = 0;
};

// Request counters, shared with the collecting thread for self metrics.
class HttpStats {
 public:
  HttpStats();
  void count_request(const std::string& handler, unsigned code);
  void count_rejected_connection();
  void set_open_connections(int n);
  // `reason`: missing or invalid.
  void count_auth_failure(const std::string& reason);
  // `reason`: plain_http, protocol, client_certificate, timeout or other.
  void count_tls_handshake_failure(const std::string& reason);
  void add_metrics(MetricSink& sink) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, unsigned>, uint64_t> requests_;
  std::map<std::string, uint64_t> auth_failures_;
  std::map<std::string, uint64_t> tls_failures_;
  uint64_t rejected_ = 0;
  int open_ = 0;
};

// The HTTP endpoint (Boost.Beast): GET/HEAD of /metrics, / and /healthz,
// over plain TCP or TLS, with optional basic auth (exporter/web_security.hpp).
// Bounded in every dimension a client controls: TLS handshake time, request
// size, time to send a request, idle keep-alive time, time to take a
// response, and the number of open connections.
class HttpServer {
 public:
  using ReloadHook = std::function<void(std::function<void(bool, std::string)>)>;

  HttpServer(boost::asio::io_context& io, const Config::Web& config, SnapshotCache& cache,
             std::shared_ptr<const WebSecurity> security = nullptr);
  ~HttpServer();

  // Binds and starts accepting; the error names the address.
  Status start();
  boost::asio::ip::tcp::endpoint local_endpoint() const;

  // Stops accepting, closes idle connections, and lets requests and
  // responses in flight finish; calls `drained` once the last connection
  // has closed.
  void stop(std::function<void()> drained = nullptr);

  bool stopping() const { return state_->stopping; }

  // Takes new limits and timeouts (reload); the listen address stays.
  void update_config(const Config::Web& config);

  // New TLS context, users and headers for connections accepted from now on
  // (reload); open connections keep the ones they started with.
  void update_security(std::shared_ptr<const WebSecurity> security);
  bool serves_tls() const { return state_->security->tls != nullptr; }

  // What POST /-/reload runs when web.enable_lifecycle is on: it calls the
  // given function with success and a message once the reload is done.
  void set_reload_hook(ReloadHook hook) { state_->reload = std::move(hook); }
  std::shared_ptr<HttpStats> stats() const { return state_->stats; }

  // What sessions share with the server. Sessions hold it by shared_ptr, so
  // a session torn down after the server (on a forced shutdown) stays valid.
  struct State {
    Config::Web config;
    SnapshotCache* cache = nullptr;
    std::shared_ptr<const WebSecurity> security;
    // One thread for bcrypt checks, so a flood of wrong passwords costs at
    // most one core and never blocks the event loop. Owned by the server.
    boost::asio::thread_pool* verifier = nullptr;
    std::shared_ptr<HttpStats> stats = std::make_shared<HttpStats>();
    std::set<std::weak_ptr<HttpSessionBase>, std::owner_less<std::weak_ptr<HttpSessionBase>>>
        sessions;
    int open = 0;
    bool stopping = false;
    std::function<void()> drained;
    ReloadHook reload;
  };

 private:
  void accept();

  boost::asio::io_context& io_;
  std::shared_ptr<State> state_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::unique_ptr<boost::asio::thread_pool> verifier_;
};

// Whether an Accept-Encoding header value admits gzip.
bool accepts_gzip(std::string_view header);

}  // namespace rdma_exporter
