#include "exporter/otlp/http_client.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <memory>

namespace rdma_exporter {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr std::size_t kMaxResponseHeader = 16 * 1024;
constexpr std::size_t kMaxResponseBody = 64 * 1024;
constexpr std::size_t kBodyExcerpt = 512;

// One exchange. Completion handlers own it, so an exchange given up on
// (timeout, abort) stays valid until its handlers have run or been dropped.
struct Exchange : std::enable_shared_from_this<Exchange> {
  explicit Exchange(asio::io_context& io) : resolver(io), stream(io) {
    parser.header_limit(kMaxResponseHeader);
    parser.body_limit(kMaxResponseBody);
  }

  void fail(const beast::error_code& ec, const char* what) {
    if (done) return;
    done = true;
    result.kind = OtlpHttpResult::Kind::network_error;
    result.error = std::string(what) + ": " + ec.message();
    close();
  }

  void close() {
    beast::error_code ignored;
    resolver.cancel();
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream.close();
  }

  void start(const OtlpEndpoint& endpoint, std::chrono::steady_clock::time_point deadline) {
    resolver.async_resolve(
        endpoint.host, std::to_string(endpoint.port),
        [self = shared_from_this(), deadline](const beast::error_code& ec,
                                              const tcp::resolver::results_type& results) {
          if (self->done) return;
          if (ec) return self->fail(ec, "resolve");
          self->stream.expires_at(deadline);
          self->stream.async_connect(
              results, [self](const beast::error_code& cec, const tcp::endpoint&) {
                if (self->done) return;
                if (cec) return self->fail(cec, "connect");
                http::async_write(self->stream, self->request,
                                  [self](const beast::error_code& wec, std::size_t) {
                                    if (self->done) return;
                                    if (wec) return self->fail(wec, "send");
                                    self->read();
                                  });
              });
        });
  }

  void read() {
    http::async_read(stream, buffer, parser,
                     [self = shared_from_this()](const beast::error_code& ec, std::size_t) {
                       if (self->done) return;
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
  beast::tcp_stream stream;
  http::request<http::string_body> request;
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  OtlpHttpResult result;
  bool done = false;
};

}  // namespace

OtlpHttpClient::OtlpHttpClient(OtlpEndpoint endpoint) : endpoint_(std::move(endpoint)) {}

OtlpHttpClient::~OtlpHttpClient() = default;

void OtlpHttpClient::abort() {
  aborted_ = true;
  io_.stop();
}

OtlpHttpResult OtlpHttpClient::post(const std::string& body, const Headers& headers,
                                    std::chrono::milliseconds timeout) {
  OtlpHttpResult aborted;
  aborted.kind = OtlpHttpResult::Kind::aborted;
  io_.restart();
  // After restart(): an abort() that raced with it is seen here, one after
  // it stops run_until() below.
  if (aborted_) return aborted;

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto x = std::make_shared<Exchange>(io_);
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

}  // namespace rdma_exporter
