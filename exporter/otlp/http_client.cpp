#include "exporter/otlp/http_client.hpp"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <memory>
#include <type_traits>

#include "exporter/openssl.hpp"
#include "exporter/otlp/tls.hpp"

namespace rdma_exporter {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

namespace {

constexpr std::size_t kMaxResponseHeader = std::size_t{16} * 1024;
constexpr std::size_t kMaxResponseBody = std::size_t{64} * 1024;
constexpr std::size_t kBodyExcerpt = 512;

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// Why a TLS handshake failed, in words: the certificate check's verdict
// when it was the certificate, else OpenSSL's reason.
std::string handshake_problem(TlsStream& stream, const beast::error_code& ec) {
  const long verdict = SSL_get_verify_result(stream.native_handle());
  if (verdict != X509_V_OK) {
    return std::string("the receiver's certificate was refused: ") +
           X509_verify_cert_error_string(verdict);
  }
  return ec.message();
}

// One exchange over a plain TCP stream or a TLS one. Completion handlers
// own it, so an exchange given up on (timeout, abort) stays valid until its
// handlers have run or been dropped.
template <class Stream>
struct Exchange : std::enable_shared_from_this<Exchange<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  explicit Exchange(asio::io_context& io) requires(!kTls) : resolver(io), stream(io) { init(); }
  Exchange(asio::io_context& io, ssl::context& tls) requires(kTls) : resolver(io), stream(io, tls) {
    init();
  }

  void init() {
    parser.header_limit(kMaxResponseHeader);
    parser.body_limit(kMaxResponseBody);
  }

  void fail(const std::string& what, const std::string& why,
            OtlpHttpResult::Kind kind = OtlpHttpResult::Kind::network_error) {
    if (done) return;
    done = true;
    result.kind = kind;
    result.error = what + ": " + why;
    close();
  }

  // An error of the TLS layer (an alert from the receiver, such as one
  // refusing a missing client certificate after a TLS 1.3 handshake) is a
  // TLS error whatever the step; a connection cut short is a network one.
  void fail(const beast::error_code& ec, const char* what) {
    const bool tls =
        ec.category() == asio::error::get_ssl_category() && ec != ssl::error::stream_truncated;
    fail(what, ec.message(),
         tls ? OtlpHttpResult::Kind::tls_error : OtlpHttpResult::Kind::network_error);
  }

  void close() {
    beast::error_code ignored;
    resolver.cancel();
    auto& socket = beast::get_lowest_layer(stream).socket();
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(stream).close();
  }

  // TLS: the name sent for virtual hosting (SNI; never an address, RFC
  // 6066) and the name or address the certificate must be for.
  std::string prepare_tls(const OtlpEndpoint& endpoint) {
    if constexpr (kTls) {
      boost::system::error_code ec;
      asio::ip::make_address(endpoint.host, ec);
      if (ec && SSL_set_tlsext_host_name(stream.native_handle(), endpoint.host.c_str()) != 1) {
        return "cannot set the server name " + endpoint.host +
               " (SNI): " + openssl_reason("unknown reason");
      }
      stream.set_verify_callback(
          [check = ssl::host_name_verification(endpoint.host)](bool preverified,
                                                               ssl::verify_context& ctx) {
            if (!preverified) return false;
            if (check(preverified, ctx)) return true;
            // The chain is good but it is someone else's: say so.
            X509_STORE_CTX_set_error(ctx.native_handle(), X509_V_ERR_HOSTNAME_MISMATCH);
            return false;
          },
          ec);
      if (ec) return "cannot set the certificate check: " + ec.message();
    }
    (void)endpoint;
    return {};
  }

  void start(const OtlpEndpoint& endpoint, std::chrono::steady_clock::time_point deadline) {
    if (std::string problem = prepare_tls(endpoint); !problem.empty()) {
      return fail("TLS setup", problem, OtlpHttpResult::Kind::tls_error);
    }
    resolver.async_resolve(
        endpoint.host, std::to_string(endpoint.port),
        [self = this->shared_from_this(), deadline](const beast::error_code& ec,
                                                    const tcp::resolver::results_type& results) {
          if (self->done) return;
          if (ec) return self->fail(ec, "resolve");
          auto& tcp_layer = beast::get_lowest_layer(self->stream);
          tcp_layer.expires_at(deadline);
          tcp_layer.async_connect(results,
                                  [self](const beast::error_code& cec, const tcp::endpoint&) {
                                    if (self->done) return;
                                    if (cec) return self->fail(cec, "connect");
                                    self->handshake();
                                  });
        });
  }

  void handshake() {
    if constexpr (kTls) {
      stream.async_handshake(
          ssl::stream_base::client, [self = this->shared_from_this()](const beast::error_code& ec) {
            if (self->done) return;
            if (ec) {
              // A refused certificate or a TLS-level failure is a TLS
              // error; a timeout or a reset during the handshake is a
              // network one.
              const bool tls = ec.category() == asio::error::get_ssl_category() ||
                               SSL_get_verify_result(self->stream.native_handle()) != X509_V_OK;
              return self->fail(
                  "TLS handshake", handshake_problem(self->stream, ec),
                  tls ? OtlpHttpResult::Kind::tls_error : OtlpHttpResult::Kind::network_error);
            }
            self->write();
          });
    } else {
      write();
    }
  }

  void write() {
    http::async_write(stream, request,
                      [self = this->shared_from_this()](const beast::error_code& ec, std::size_t) {
                        if (self->done) return;
                        if (ec) {
                          // A TLS receiver that refuses the client (no or
                          // a bad certificate, TLS 1.3) says why in an
                          // alert and closes, which the send may run into
                          // first: read on to get the alert.
                          if (!kTls) return self->fail(ec, "send");
                          self->send_error = ec;
                        }
                        self->read();
                      });
  }

  void read() {
    http::async_read(stream, buffer, parser,
                     [self = this->shared_from_this()](const beast::error_code& ec, std::size_t) {
                       if (self->done) return;
                       if (self->send_error) {
                         const bool alert = ec.category() == asio::error::get_ssl_category() &&
                                            ec != ssl::error::stream_truncated;
                         return alert ? self->fail(ec, "receive")
                                      : self->fail(self->send_error, "send");
                       }
                       if (ec && ec != http::error::body_limit) {
                         return self->fail(ec, "receive");
                       }
                       // A body over the limit still has a status worth acting on.
                       self->done = true;
                       const auto& res = self->parser.get();
                       self->result.kind = OtlpHttpResult::Kind::response;
                       self->result.status = res.result_int();
                       if (auto it = res.find(http::field::retry_after); it != res.end()) {
                         self->result.retry_after = std::string(it->value());
                       }
                       self->result.body = res.body().substr(0, kBodyExcerpt);
                       self->close();
                     });
  }

  tcp::resolver resolver;
  Stream stream;
  http::request<http::string_body> request;
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  OtlpHttpResult result;
  beast::error_code send_error;  // TLS: the send failed; reading for the reason
  bool done = false;
};

}  // namespace

OtlpHttpClient::OtlpHttpClient(OtlpEndpoint endpoint, std::shared_ptr<ssl::context> tls)
    : endpoint_(std::move(endpoint)), tls_(std::move(tls)) {}

OtlpHttpClient::~OtlpHttpClient() = default;

void OtlpHttpClient::abort() {
  aborted_ = true;
  io_.stop();
}

template <class X>
OtlpHttpResult OtlpHttpClient::run(const std::shared_ptr<X>& x, const std::string& body,
                                   const Headers& headers, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto& req = x->request;
  req.method(http::verb::post);
  req.target(endpoint_.target);
  req.version(11);
  req.set(http::field::host, endpoint_.host_header);
  for (const auto& [name, value] : headers) req.set(name, value);
  req.keep_alive(false);
  req.body() = body;
  req.prepare_payload();
  x->start(endpoint_, deadline);

  // Resolution has no timeout of its own; the deadline covers it here.
  io_.run_until(deadline + std::chrono::milliseconds(50));
  if (aborted_) {
    x->done = true;
    x->close();
    OtlpHttpResult aborted;
    aborted.kind = OtlpHttpResult::Kind::aborted;
    return aborted;
  }
  if (!x->done) {
    x->done = true;
    x->close();
    x->result.kind = OtlpHttpResult::Kind::network_error;
    x->result.error = "no answer within " + std::to_string(timeout.count()) + "ms";
  }
  return x->result;
}

OtlpHttpResult OtlpHttpClient::post(const std::string& body, const Headers& headers,
                                    std::chrono::milliseconds timeout) {
  OtlpHttpResult aborted;
  aborted.kind = OtlpHttpResult::Kind::aborted;
  io_.restart();
  // After restart(): an abort() that raced with it is seen here, one after
  // it stops run_until() below.
  if (aborted_) return aborted;

  if (!endpoint_.tls) {
    return run(std::make_shared<Exchange<beast::tcp_stream>>(io_), body, headers, timeout);
  }
  if (!tls_) {
    OtlpHttpResult r;
    r.kind = OtlpHttpResult::Kind::tls_error;
    r.error = "TLS setup: no TLS context for an https:// endpoint";
    return r;
  }
  return run(std::make_shared<Exchange<TlsStream>>(io_, *tls_), body, headers, timeout);
}

}  // namespace rdma_exporter
