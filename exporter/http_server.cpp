#include "exporter/http_server.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <optional>
#include <type_traits>
#include <utility>

#include "common/log.hpp"
#include "exporter/collection.hpp"
#include "exporter/formats/text.hpp"

namespace rdma_exporter {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr const char* kLanding =
    "<!DOCTYPE html>\n<html><head><title>rdma_exporter</title></head><body>\n"
    "<h1>rdma_exporter</h1>\n<p>Prometheus exporter for Linux RDMA counters.</p>\n"
    "<ul><li><a href=\"metrics\">metrics</a></li><li><a href=\"healthz\">healthz</a></li></ul>\n"
    "</body></html>\n";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_http_parse_error(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category();
}

// A failed TLS handshake, in the few kinds an operator can act on.
std::string tls_failure_reason(const beast::error_code& ec) {
  if (ec == beast::error::timeout) return "timeout";
  if (ec.category() != asio::error::get_ssl_category()) return "other";
  switch (ERR_GET_REASON(static_cast<unsigned long>(ec.value()))) {
    case SSL_R_HTTP_REQUEST:
    case SSL_R_HTTPS_PROXY_REQUEST:
      return "plain_http";
    case SSL_R_UNSUPPORTED_PROTOCOL:
    case SSL_R_UNSUPPORTED_SSL_VERSION:
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_VERSION_TOO_LOW:
    case SSL_R_UNKNOWN_PROTOCOL:
    case SSL_R_NO_PROTOCOLS_AVAILABLE:
    case SSL_R_NO_SHARED_CIPHER:
    case SSL_R_NO_SHARED_GROUPS:
    case SSL_R_NO_SUITABLE_SIGNATURE_ALGORITHM:
      return "protocol";
    case SSL_R_CERTIFICATE_VERIFY_FAILED:
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
    case SSL_R_NO_CERTIFICATES_RETURNED:
      return "client_certificate";
    default:
      return "other";
  }
}

constexpr const char* kAuthReasons[] = {"missing", "invalid"};
constexpr const char* kTlsReasons[] = {"plain_http", "protocol", "client_certificate", "timeout",
                                       "other"};

}  // namespace

// "gzip" or "*" with a q-value that is not 0.
bool accepts_gzip(std::string_view header) {
  while (!header.empty()) {
    const auto comma = header.find(',');
    std::string_view item = trim(header.substr(0, comma));
    header = comma == std::string_view::npos ? std::string_view{} : header.substr(comma + 1);
    std::string_view coding = trim(item.substr(0, item.find(';')));
    if (coding != "gzip" && coding != "*") continue;
    const auto q = item.find("q=");
    if (q != std::string_view::npos) {
      std::string value(trim(item.substr(q + 2)));
      if (std::strtod(value.c_str(), nullptr) <= 0.0) continue;
    }
    return true;
  }
  return false;
}

// One connection. Stream is beast::tcp_stream (plain HTTP) or
// beast::ssl_stream<beast::tcp_stream> (TLS): the HTTP logic is the same,
// TLS only adds the handshake before the first request and close_notify
// after the last response.
template <typename Stream>
class HttpSession : public HttpSessionBase,
                    public std::enable_shared_from_this<HttpSession<Stream>> {
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

 public:
  template <typename... StreamArgs>
  HttpSession(std::shared_ptr<HttpServer::State> server,
              std::shared_ptr<const WebSecurity> security, StreamArgs&&... stream_args)
      : stream_(std::forward<StreamArgs>(stream_args)...),
        buffer_(server->config.max_request_bytes),
        server_(std::move(server)),
        security_(std::move(security)) {
    server_->stats->set_open_connections(++server_->open);
  }
  ~HttpSession() override {
    auto& sessions = server_->sessions;
    for (auto it = sessions.begin(); it != sessions.end();) {
      it = it->expired() ? sessions.erase(it) : std::next(it);
    }
    server_->stats->set_open_connections(--server_->open);
    if (server_->stopping && server_->open == 0 && server_->drained) {
      auto drained = std::move(server_->drained);
      server_->drained = nullptr;
      drained();
    }
  }

  void start() {
    if constexpr (kTls) {
      // The handshake counts as part of the first request: it gets
      // web.read_timeout.
      state_ = State::handshaking;
      lowest().expires_after(server_->config.read_timeout);
      stream_.async_handshake(
          asio::ssl::stream_base::server,
          [self = this->shared_from_this()](beast::error_code ec) { self->on_handshake(ec); });
    } else {
      read();
    }
  }

  // On shutdown: a connection waiting for its next request, with no byte of
  // it received (or still in its TLS handshake), is closed now; one with a
  // request or response in flight closes after answering it.
  void close_if_idle() override {
    beast::error_code ec;
    const bool request_started = buffer_.size() > 0 || lowest().socket().available(ec) > 0 ||
                                 (parser_ && parser_->got_some());
    if (state_ == State::handshaking || (state_ == State::reading && !request_started)) {
      beast::error_code ignored;
      lowest().socket().close(ignored);
    }
  }

 private:
  enum class State { handshaking, reading, handling, writing, closing };

  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  void on_handshake(beast::error_code ec) {
    if (ec) {
      if (!server_->stopping) {
        const std::string reason = tls_failure_reason(ec);
        server_->stats->count_tls_handshake_failure(reason);
        log::debug("TLS handshake with " + peer() + " failed (" + reason + "): " + ec.message());
      }
      return close_socket();
    }
    handshake_done_ = true;
    read();
  }

  std::string peer() {
    beast::error_code ec;
    const auto ep = lowest().socket().remote_endpoint(ec);
    return ec ? std::string("?") : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  void read() {
    state_ = State::reading;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_->config.max_request_bytes));
    parser_->body_limit(0);
    lowest().expires_after(first_ ? server_->config.read_timeout : server_->config.idle_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                       self->on_read(ec);
                     });
  }

  void on_read(beast::error_code ec) {
    first_ = false;
    if (ec) {
      if (ec == http::error::header_limit || ec == http::error::buffer_overflow ||
          ec == http::error::body_limit) {
        return respond_error(http::status::bad_request, "request too large\n");
      }
      if (is_http_parse_error(ec) && ec != http::error::end_of_stream &&
          ec != http::error::partial_message) {
        return respond_error(http::status::bad_request,
                             "malformed request: " + ec.message() + "\n");
      }
      return close_socket();  // timeout, end of stream, reset, shutdown
    }
    handle();
  }

  void handle() {
    state_ = State::handling;
    const auto& req = parser_->get();
    const std::string_view target(req.target().data(), req.target().size());
    const std::string_view path = target.substr(0, target.find('?'));
    head_ = req.method() == http::verb::head;
    keep_alive_ = req.keep_alive() && !server_->stopping;
    handler_ = handler_of(path);

    // Every path is behind basic auth when users are configured, as in
    // exporter-toolkit: an unauthenticated client learns nothing, not even
    // which paths exist.
    if (const auto& auth = security_->auth) {
      const auto header = req[http::field::authorization];
      auto credentials = parse_basic_authorization(std::string_view(header.data(), header.size()));
      if (!credentials) return unauthorized(header.empty() ? "missing" : "invalid");
      if (!auth->known_good(*credentials)) return verify(std::move(*credentials));
    }
    route();
  }

  static std::string handler_of(std::string_view path) {
    for (const char* known : {"/metrics", "/", "/healthz", "/-/reload"}) {
      if (path == known) return known;
    }
    return "other";
  }

  // bcrypt runs on the server's verifier thread; the answer comes back on
  // the event loop. Each connection has at most one request in flight, so
  // the queue is bounded by web.max_connections.
  void verify(Credentials credentials) {
    if (server_->verifier == nullptr) return unauthorized("invalid");
    asio::post(*server_->verifier,
               [auth = security_->auth, credentials = std::move(credentials),
                exec = lowest().get_executor(), self = this->shared_from_this()]() mutable {
                 const bool ok = auth->verify(credentials);
                 asio::post(exec, [self = std::move(self), ok] { self->on_verified(ok); });
               });
  }

  void on_verified(bool ok) {
    if (!ok) return unauthorized("invalid");
    route();
  }

  void unauthorized(const char* reason) {
    server_->stats->count_auth_failure(reason);
    server_->stats->count_request(handler_, 401);
    respond(http::status::unauthorized, "text/plain; charset=utf-8", "unauthorized\n",
            {{"WWW-Authenticate", "Basic realm=\"rdma_exporter\", charset=\"UTF-8\""}});
  }

  void route() {
    const auto& req = parser_->get();
    const bool allowed = req.method() == http::verb::get || head_;
    if (handler_ == "/-/reload") return handle_reload(req.method());
    if (handler_ == "other") {
      server_->stats->count_request(handler_, 404);
      return respond(http::status::not_found, "text/plain; charset=utf-8", "not found\n");
    }
    if (!allowed) {
      server_->stats->count_request(handler_, 405);
      return respond(http::status::method_not_allowed, "text/plain; charset=utf-8",
                     "method not allowed\n", {{"Allow", "GET, HEAD"}});
    }
    if (handler_ == "/") {
      server_->stats->count_request(handler_, 200);
      return respond(http::status::ok, "text/html; charset=utf-8", kLanding);
    }
    if (handler_ == "/healthz") {
      server_->stats->count_request(handler_, 200);
      return respond(http::status::ok, "text/plain; charset=utf-8", "OK\n");
    }
    const auto encoding = req[http::field::accept_encoding];
    const bool gzip = accepts_gzip(std::string_view(encoding.data(), encoding.size()));
    server_->cache->get(
        [self = this->shared_from_this(), gzip](std::shared_ptr<const Snapshot> snap) {
          self->serve_snapshot(std::move(snap), gzip);
        });
  }

  void handle_reload(http::verb method) {
    const std::string handler = "/-/reload";
    if (!server_->config.enable_lifecycle || !server_->reload) {
      server_->stats->count_request(handler, 403);
      return respond(http::status::forbidden, "text/plain; charset=utf-8",
                     "the lifecycle API is off (web.enable_lifecycle)\n");
    }
    if (method != http::verb::post && method != http::verb::put) {
      server_->stats->count_request(handler, 405);
      return respond(http::status::method_not_allowed, "text/plain; charset=utf-8",
                     "method not allowed\n", {{"Allow", "POST, PUT"}});
    }
    server_->reload([self = this->shared_from_this(), handler](bool ok, std::string message) {
      const auto status = ok ? http::status::ok : http::status::internal_server_error;
      self->server_->stats->count_request(handler, static_cast<unsigned>(status));
      self->owned_body_ = std::move(message) + "\n";
      self->respond(status, "text/plain; charset=utf-8", self->owned_body_);
    });
  }

  void serve_snapshot(std::shared_ptr<const Snapshot> snap, bool gzip) {
    if (snap->text.empty()) {
      server_->stats->count_request("/metrics", 500);
      return respond_error(http::status::internal_server_error, "collection failed to render\n");
    }
    server_->stats->count_request("/metrics", 200);
    snapshot_ = std::move(snap);
    const std::string& body = gzip ? snapshot_->gzip : snapshot_->text;
    std::vector<std::pair<std::string, std::string>> extra{{"Vary", "Accept-Encoding"}};
    if (gzip) extra.emplace_back("Content-Encoding", "gzip");
    respond(http::status::ok, kTextContentType, body, extra);
  }

  void respond_error(http::status status, std::string body) {
    server_->stats->count_request("other", static_cast<unsigned>(status));
    keep_alive_ = false;
    head_ = false;
    owned_body_ = std::move(body);
    respond(status, "text/plain; charset=utf-8", owned_body_);
  }

  // `body` must outlive the write: a static string, owned_body_ or snapshot_.
  void respond(http::status status, const char* content_type, std::string_view body,
               const std::vector<std::pair<std::string, std::string>>& extra = {}) {
    auto fill = [&](auto& res) {
      res.version(11);
      res.set(http::field::server, "rdma_exporter");
      res.set(http::field::content_type, content_type);
      for (const auto& [k, v] : security_->headers) res.set(k, v);
      for (const auto& [k, v] : extra) res.set(k, v);
      res.keep_alive(keep_alive_);
      res.content_length(body.size());
    };
    if (head_) {
      auto res = std::make_shared<http::response<http::empty_body>>(status, 11);
      fill(*res);
      return write(std::move(res));
    }
    auto res = std::make_shared<http::response<http::span_body<const char>>>(status, 11);
    res->body() = http::span_body<const char>::value_type(body.data(), body.size());
    fill(*res);
    write(std::move(res));
  }

  template <typename Body>
  void write(std::shared_ptr<http::response<Body>> res) {
    state_ = State::writing;
    const bool close_after = !res->keep_alive();
    lowest().expires_after(server_->config.write_timeout);
    http::async_write(stream_, *res,
                      [self = this->shared_from_this(), res, close_after](
                          beast::error_code ec, std::size_t) { self->on_write(ec, close_after); });
  }

  void on_write(beast::error_code ec, bool close_after) {
    snapshot_.reset();
    owned_body_.clear();
    if (ec) return close_socket();
    if (close_after || server_->stopping) return finish();
    read();
  }

  // The server ends the connection after a response. Over TLS it says so
  // with close_notify first, waiting at most a second for the client's.
  void finish() {
    if constexpr (kTls) {
      if (handshake_done_) {
        state_ = State::closing;
        lowest().expires_after(
            std::min<Duration>(server_->config.write_timeout, std::chrono::seconds(1)));
        stream_.async_shutdown(
            [self = this->shared_from_this()](beast::error_code) { self->close_socket(); });
        return;
      }
    }
    close_socket();
  }

  void close_socket() {
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    lowest().socket().close(ignored);
  }

  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> parser_;
  std::shared_ptr<HttpServer::State> server_;
  std::shared_ptr<const WebSecurity> security_;  // the one this connection was accepted with
  State state_ = State::reading;
  bool first_ = true;
  bool handshake_done_ = false;
  bool keep_alive_ = false;
  bool head_ = false;
  std::string handler_;
  std::shared_ptr<const Snapshot> snapshot_;
  std::string owned_body_;
};

HttpStats::HttpStats() {
  for (const char* r : kAuthReasons) auth_failures_[r] = 0;
  for (const char* r : kTlsReasons) tls_failures_[r] = 0;
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

void HttpStats::count_rejected_connection() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++rejected_;
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
  sink.counter("rdma_exporter_http_rejected_connections_total",
               "Connections closed at once because web.max_connections were open.", {},
               static_cast<double>(rejected_));
  sink.gauge("rdma_exporter_http_open_connections", "HTTP connections currently open.", {}, open_);
  for (const auto& [reason, count] : auth_failures_) {
    sink.counter("rdma_exporter_http_auth_failures_total",
                 "Requests refused with 401: basic auth credentials missing or invalid.",
                 {{"reason", reason}}, static_cast<double>(count));
  }
  for (const auto& [reason, count] : tls_failures_) {
    sink.counter("rdma_exporter_http_tls_handshake_failures_total",
                 "TLS handshakes that failed, by kind.", {{"reason", reason}},
                 static_cast<double>(count));
  }
}

HttpServer::HttpServer(asio::io_context& io, const Config::Web& config, SnapshotCache& cache,
                       std::shared_ptr<const WebSecurity> security)
    : io_(io), state_(std::make_shared<State>()), acceptor_(io) {
  state_->config = config;
  state_->cache = &cache;
  update_security(std::move(security));
}

// Checks in progress are abandoned: their connections are released here, on
// this thread, before the event loop they post to goes away. Connections
// released later (with the event loop, after a forced shutdown) must not
// call a `drained` whose owner is gone.
HttpServer::~HttpServer() {
  state_->drained = nullptr;
  if (verifier_) {
    verifier_->stop();
    verifier_->join();
  }
  state_->verifier = nullptr;
}

void HttpServer::update_security(std::shared_ptr<const WebSecurity> security) {
  if (!security) security = std::make_shared<const WebSecurity>();
  if (security->auth && !verifier_) {
    verifier_ = std::make_unique<asio::thread_pool>(1);
    state_->verifier = verifier_.get();
  }
  state_->security = std::move(security);
}

Status HttpServer::start() {
  if (Status s = open_listener(acceptor_, state_->config.listen_address); !s) return s;
  accept();
  return ok_status();
}

tcp::endpoint HttpServer::local_endpoint() const {
  beast::error_code ec;
  return acceptor_.local_endpoint(ec);
}

void HttpServer::accept() {
  acceptor_.async_accept([this, state = state_](beast::error_code ec, tcp::socket socket) {
    if (state->stopping || !acceptor_.is_open()) return;
    if (ec) {
      // Out of file descriptors and the like: back off instead of spinning.
      log::warn("accept failed: " + ec.message());
      auto timer = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(100));
      timer->async_wait([this, state, timer](beast::error_code) {
        if (!state->stopping) accept();
      });
      return;
    }
    const auto& security = state->security;
    if (state->open >= state->config.max_connections) {
      state->stats->count_rejected_connection();
      // Over TLS a plain-text answer would only confuse the client: close.
      static constexpr std::string_view kBusy =
          "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      beast::error_code ignored;
      if (!security->tls) {
        socket.non_blocking(true, ignored);
        socket.write_some(asio::buffer(kBusy.data(), kBusy.size()), ignored);
      }
      socket.close(ignored);
    } else {
      auto launch = [&state](auto session) {
        state->sessions.insert(session);
        session->start();
      };
      using TlsStream = beast::ssl_stream<beast::tcp_stream>;
      if (security->tls) {
        launch(std::make_shared<HttpSession<TlsStream>>(state, security, std::move(socket),
                                                        *security->tls));
      } else {
        launch(
            std::make_shared<HttpSession<beast::tcp_stream>>(state, security, std::move(socket)));
      }
    }
    accept();
  });
}

void HttpServer::update_config(const Config::Web& config) {
  const std::string listen = state_->config.listen_address;
  state_->config = config;
  state_->config.listen_address = listen;
}

void HttpServer::stop(std::function<void()> drained) {
  if (state_->stopping) return;
  state_->stopping = true;
  state_->drained = std::move(drained);
  beast::error_code ignored;
  acceptor_.close(ignored);
  for (const auto& weak : state_->sessions) {
    if (auto s = weak.lock()) s->close_if_idle();
  }
  if (state_->open == 0 && state_->drained) {
    asio::post(io_, std::exchange(state_->drained, nullptr));
  }
}

}  // namespace rdma_exporter
