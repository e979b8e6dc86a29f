#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "collectors/metric_sink.hpp"
#include "collectors/result.hpp"
#include "exporter/config.hpp"
#include "exporter/snapshot_cache.hpp"

namespace rdma_exporter {

class HttpSession;

// Request counters, shared with the collecting thread for self metrics.
class HttpStats {
 public:
  void count_request(const std::string& handler, unsigned code);
  void count_rejected_connection();
  void set_open_connections(int n);
  void add_metrics(MetricSink& sink) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, unsigned>, uint64_t> requests_;
  uint64_t rejected_ = 0;
  int open_ = 0;
};

// The HTTP endpoint (Boost.Beast): GET/HEAD of /metrics, / and /healthz.
// Bounded in every dimension a client controls: request size, time to send
// a request, idle keep-alive time, time to take a response, and the number
// of open connections.
class HttpServer {
 public:
  using ReloadHook = std::function<void(std::function<void(bool, std::string)>)>;

  HttpServer(boost::asio::io_context& io, const Config::Web& config, SnapshotCache& cache);
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

  // What POST /-/reload runs when web.enable_lifecycle is on: it calls the
  // given function with success and a message once the reload is done.
  void set_reload_hook(ReloadHook hook) { state_->reload = std::move(hook); }
  std::shared_ptr<HttpStats> stats() const { return state_->stats; }

  // What sessions share with the server. Sessions hold it by shared_ptr, so
  // a session torn down after the server (on a forced shutdown) stays valid.
  struct State {
    Config::Web config;
    SnapshotCache* cache = nullptr;
    std::shared_ptr<HttpStats> stats = std::make_shared<HttpStats>();
    std::set<std::weak_ptr<HttpSession>, std::owner_less<std::weak_ptr<HttpSession>>> sessions;
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
};

// Whether an Accept-Encoding header value admits gzip.
bool accepts_gzip(std::string_view header);

}  // namespace rdma_exporter
