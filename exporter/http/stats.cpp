#include "exporter/http/stats.hpp"

namespace rdma_exporter {

namespace {

// Always exported, at 0 until they happen.
constexpr const char* kAuthReasons[] = {"missing", "invalid", "throttled"};
constexpr const char* kTlsReasons[] = {"plain_http", "protocol", "client_certificate", "timeout",
                                       "other"};
constexpr const char* kRejectReasons[] = {"max_connections", "max_connections_per_source"};
constexpr const char* kEvictReasons[] = {"tls_handshake", "headers", "idle", "closing",
                                         "auth_check"};

}  // namespace

HttpStats::HttpStats() {
  for (const char* r : kAuthReasons) auth_failures_[r] = 0;
  for (const char* r : kTlsReasons) tls_failures_[r] = 0;
  for (const char* r : kRejectReasons) rejected_[r] = 0;
  for (const char* r : kEvictReasons) evicted_[r] = 0;
}

void HttpStats::count_auth_failure(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++auth_failures_[reason];
}

void HttpStats::count_tls_handshake_failure(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++tls_failures_[reason];
}

void HttpStats::count_request(const std::string& handler, unsigned code) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{handler, code}];
}

void HttpStats::count_rejected_connection(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++rejected_[reason];
}

void HttpStats::count_evicted_connection(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++evicted_[reason];
}

void HttpStats::set_open_connections(int n) {
  std::lock_guard<std::mutex> lock(mutex_);
  open_ = n;
}

void HttpStats::add_metrics(MetricSink& sink) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [key, count] : requests_) {
    sink.counter(
        "rdma_exporter_http_requests_total", "HTTP requests answered, by handler and status code.",
        {{"handler", key.first}, {"code", std::to_string(key.second)}}, static_cast<double>(count));
  }
  for (const auto& [reason, count] : rejected_) {
    sink.counter("rdma_exporter_http_rejected_connections_total",
                 "Connections closed at once for want of a place, by the limit that refused them.",
                 {{"reason", reason}}, static_cast<double>(count));
  }
  for (const auto& [reason, count] : evicted_) {
    sink.counter("rdma_exporter_http_evicted_connections_total",
                 "Connections closed to make room for a new one at web.max_connections or "
                 "web.max_connections_per_source, by what they were doing.",
                 {{"reason", reason}}, static_cast<double>(count));
  }
  sink.gauge("rdma_exporter_http_open_connections", "HTTP connections currently open.", {}, open_);
  for (const auto& [reason, count] : auth_failures_) {
    sink.counter("rdma_exporter_http_auth_failures_total",
                 "Requests refused with 401: basic auth credentials missing or invalid, or no "
                 "place to check them.",
                 {{"reason", reason}}, static_cast<double>(count));
  }
  for (const auto& [reason, count] : tls_failures_) {
    sink.counter("rdma_exporter_http_tls_handshake_failures_total",
                 "TLS handshakes that failed, by kind.", {{"reason", reason}},
                 static_cast<double>(count));
  }
}

}  // namespace rdma_exporter
