#pragma once

#include <boost/asio/ip/address.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <memory>
#include <set>

#include "exporter/config.hpp"
#include "exporter/http/auth_checks.hpp"
#include "exporter/http/connection_slots.hpp"
#include "exporter/http/rate_limiter.hpp"
#include "exporter/http/router.hpp"
#include "exporter/http/stats.hpp"
#include "exporter/http/web_security.hpp"

namespace rdma_exporter {

// A connection, over plain TCP or TLS (session.cpp).
class HttpSessionBase {
 public:
  virtual ~HttpSessionBase() = default;
  // On shutdown: close now unless a request or response is in flight.
  virtual void close_if_idle() = 0;
  // Closes now to make room for a new connection (the server is at
  // web.max_connections or its source at web.max_connections_per_source),
  // and abandons its password check if it waits for one; only called on the
  // connection
  // HttpConnectionSlots::admit named, which releases its slot here.
  virtual void evict() = 0;
};

// What the server shares with its connections. Sessions hold it by
// shared_ptr, so a session torn down after the server (on a forced shutdown)
// stays valid. Used on the event loop only (stats excepted).
struct HttpServerState {
  Config::Web config;
  // Read by a session when a request arrives; replaced on reload.
  std::shared_ptr<const HttpRouter> routes;
  std::shared_ptr<const WebSecurity> security;  // for connections accepted from now on
  // The web configuration's rate_limit, over every listener; null: none.
  std::shared_ptr<RateLimiter> limiter;
  // For bcrypt checks (exporter/http/auth.hpp). Owned by the server; null
  // once it is gone.
  boost::asio::thread_pool* verifier = nullptr;
  // The places of the checks queued on it, per source group and in all.
  AuthChecks auth_checks;
  std::shared_ptr<HttpStats> stats = std::make_shared<HttpStats>();
  std::set<std::weak_ptr<HttpSessionBase>, std::owner_less<std::weak_ptr<HttpSessionBase>>>
      sessions;
  int open = 0;  // sockets of sessions not yet torn down
  // The places web.max_connections and web.max_connections_per_source
  // count and the eviction order: each session holds its slot from its
  // start until it is evicted or torn down.
  HttpConnectionSlots slots;
  bool stopping = false;
  std::function<void()> drained;
};

}  // namespace rdma_exporter
