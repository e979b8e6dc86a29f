#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "exporter/otlp/options.hpp"

namespace rdma_exporter {

struct OtlpHttpResult {
  enum class Kind {
    response,       // the receiver answered; see status
    network_error,  // no answer: resolution, connection, timeout, broken response
    tls_error,      // https://: the TLS handshake failed (certificate refused, ...) or
                    // the receiver sent a TLS alert
    aborted,        // abort() was called
  };
  Kind kind = Kind::network_error;
  unsigned status = 0;
  std::string retry_after;  // the Retry-After header, when sent
  std::string body;         // the start of the response body, for logs
  std::string error;        // what went wrong, for network and TLS errors
};

// A blocking HTTP/1.1 POST client for one endpoint, used by one thread. Each
// post opens a connection, sends, reads the answer and closes; the whole
// exchange (resolution, connect, TLS handshake, write, read) must finish
// within `timeout`. An https:// endpoint goes over TLS with `tls` (from
// make_otlp_tls_context()): the server name is sent (SNI) and the
// receiver's certificate must chain to a trusted CA and be for the
// endpoint's host name or address. A failed handshake is a tls_error whose
// text starts with "TLS handshake:"; so is any later error of the TLS layer
// (an alert from the receiver).
// abort() may be called from any thread: a post in progress, and every later
// one, returns at once with Kind::aborted.
class OtlpHttpClient {
 public:
  using Headers = std::vector<std::pair<std::string, std::string>>;

  explicit OtlpHttpClient(OtlpEndpoint endpoint,
                          std::shared_ptr<boost::asio::ssl::context> tls = nullptr);
  ~OtlpHttpClient();
  OtlpHttpClient(const OtlpHttpClient&) = delete;
  OtlpHttpClient& operator=(const OtlpHttpClient&) = delete;

  OtlpHttpResult post(const std::string& body, const Headers& headers,
                      std::chrono::milliseconds timeout);
  void abort();

 private:
  template <class X>
  OtlpHttpResult run(const std::shared_ptr<X>& exchange, const std::string& body,
                     const Headers& headers, std::chrono::milliseconds timeout);

  OtlpEndpoint endpoint_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  boost::asio::io_context io_;
  std::atomic<bool> aborted_{false};
};

}  // namespace rdma_exporter
