#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "common/metric_sink.hpp"

namespace rdma_exporter {

// The HTTP server's own metrics: counted on the event loop, read by the
// collecting thread (exporter self metrics). docs/metrics.md lists them.
class HttpStats {
 public:
  HttpStats();
  // `handler`: the route's path, or "other" (unknown paths, malformed requests).
  void count_request(const std::string& handler, unsigned code);
  // `reason`: max_connections or max_connections_per_source.
  void count_rejected_connection(const std::string& reason);
  // `reason`: tls_handshake, headers, idle, closing or auth_check.
  void count_evicted_connection(const std::string& reason);
  void set_open_connections(int n);
  // `reason`: missing, invalid or throttled.
  void count_auth_failure(const std::string& reason);
  // `reason`: plain_http, protocol, client_certificate, timeout or other.
  void count_tls_handshake_failure(const std::string& reason);
  void add_metrics(MetricSink& sink) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, unsigned>, uint64_t> requests_;
  std::map<std::string, uint64_t> auth_failures_;
  std::map<std::string, uint64_t> tls_failures_;
  std::map<std::string, uint64_t> rejected_;
  std::map<std::string, uint64_t> evicted_;
  int open_ = 0;
};

}  // namespace rdma_exporter
