#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "exporter/otlp/options.hpp"

namespace rdma_exporter {

struct OtlpHttpResult {
  enum class Kind {
    response,       // the receiver answered; see status
    network_error,  // no answer: resolution, connection, timeout, broken response
    aborted,        // abort() was called
  };
  Kind kind = Kind::network_error;
  unsigned status = 0;
  std::string retry_after;  // the Retry-After header, when sent
  std::string body;         // the start of the response body, for logs
  std::string error;        // what went wrong, for network errors
};

// A blocking HTTP/1.1 POST client for one endpoint, used by one thread. Each
// post opens a connection, sends, reads the answer and closes; the whole
// exchange (resolution, connect, write, read) must finish within `timeout`.
// abort() may be called from any thread: a post in progress, and every later
// one, returns at once with Kind::aborted.
class OtlpHttpClient {
 public:
  using Headers = std::vector<std::pair<std::string, std::string>>;

  explicit OtlpHttpClient(OtlpEndpoint endpoint);
  ~OtlpHttpClient();
  OtlpHttpClient(const OtlpHttpClient&) = delete;
  OtlpHttpClient& operator=(const OtlpHttpClient&) = delete;

  OtlpHttpResult post(const std::string& body, const Headers& headers,
                      std::chrono::milliseconds timeout);
  void abort();

 private:
  OtlpEndpoint endpoint_;
  boost::asio::io_context io_;
  std::atomic<bool> aborted_{false};
};

}  // namespace rdma_exporter
