#include "exporter/http/session.hpp"

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "common/log.hpp"
#include "exporter/http/auth.hpp"
#include "exporter/http/tls_failure.hpp"

namespace rdma_exporter {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

using Clock = std::chrono::steady_clock;

// After a refused request the client may still be sending it; see drain().
constexpr std::size_t kDrainBytes = 4 << 20;
constexpr Duration kDrainTime = std::chrono::seconds(2);

bool is_http_parse_error(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category();
}

// One connection: reads a request, authenticates it, hands it to its route
// and writes the answer, then waits for the next. Stream is
// beast::tcp_stream (plain HTTP) or beast::ssl_stream<beast::tcp_stream>
// (TLS): TLS only adds the handshake before the first request and
// close_notify after the last response. Every wait has a deadline from
// web.*_timeout. The session holds its place among the server's connections
// (an HttpConnectionSlot) from its start until it is evicted or torn down;
// while it waits for a request (or a handshake, or a password check), or
// closes, it is in the eviction order and may be evicted for a new
// connection. Its State says which, and enter() keeps the slot's rank in
// step with it.
template <typename Stream>
class HttpSession : public HttpSessionBase,
                    public std::enable_shared_from_this<HttpSession<Stream>> {
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

 public:
  template <typename... StreamArgs>
  HttpSession(std::shared_ptr<HttpServerState> server, std::shared_ptr<const WebSecurity> security,
              const asio::ip::address& source, StreamArgs&&... stream_args)
      : stream_(std::forward<StreamArgs>(stream_args)...),
        buffer_(server->config.max_request_bytes),
        server_(std::move(server)),
        security_(std::move(security)),
        source_(source),
        accepted_(Clock::now()) {
    server_->stats->set_open_connections(++server_->open);
    slot_ = server_->slots.acquire(source, this);
  }
  ~HttpSession() override {
    slot_.release();  // before `drained` below runs
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
      // web.read_timeout, and web.header_timeout runs from accept.
      enter(State::handshaking);
      lowest().expires_at(std::min(Clock::now() + server_->config.read_timeout,
                                   accepted_ + server_->config.header_timeout));
      stream_.async_handshake(
          asio::ssl::stream_base::server,
          [self = this->shared_from_this()](beast::error_code ec) { self->on_handshake(ec); });
    } else {
      read(State::reading_first);
    }
  }

  // On shutdown: a connection waiting for its next request, with no byte of
  // it received (or still in its TLS handshake), is closed now; one with a
  // request or response in flight closes after answering it.
  void close_if_idle() override {
    if (state_ == State::handshaking ||
        ((state_ == State::reading_first || state_ == State::reading_next) && !request_started())) {
      beast::error_code ignored;
      lowest().socket().close(ignored);
    }
  }

  void evict() override {
    server_->stats->count_evicted_connection(eviction_reason());
    if (check_) check_->abandon();
    enter(State::evicted);
    beast::error_code ignored;
    lowest().socket().close(ignored);
  }

 private:
  enum class State {
    handshaking,     // TLS: the handshake, which counts as part of the first request
    reading_first,   // waiting for or reading the first request
    reading_next,    // waiting for or reading a later request (kept alive)
    handling,        // serving a request
    authenticating,  // waiting for its request's password check (bcrypt)
    writing,         // writing the response
    closing,         // after the last response: close_notify (TLS), draining a refused request
    closed,          // the socket is closed; the session ends with its last handler
    evicted,         // closed for a new connection, its place given back; stays so
  };

  // Moves to `next` and the slot with it: waiting for a request (or a
  // handshake, or a password check) joins the eviction order behind those
  // waiting longer (a TLS connection keeps its rank from accept to its first
  // request); serving a request, or closed, leaves it; closing goes to its
  // front; evicted gives the place back.
  void enter(State next) {
    if (state_ == State::evicted) return;
    state_ = next;
    switch (next) {
      case State::handshaking:
      case State::reading_first:
      case State::reading_next:
      case State::authenticating:
        return slot_.queue();
      case State::handling:
      case State::writing:
      case State::closed:
        return slot_.unqueue();
      case State::closing:
        return slot_.queue_first();
      case State::evicted:
        return slot_.release();
    }
  }

  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  // Some byte of the next request has arrived.
  bool request_started() {
    beast::error_code ec;
    return buffer_.size() > 0 || lowest().socket().available(ec) > 0 ||
           (parser_ && parser_->got_some());
  }

  // rdma_exporter_http_evicted_connections_total's reason.
  const char* eviction_reason() {
    if (state_ == State::handshaking) return "tls_handshake";
    if (state_ == State::closing) return "closing";
    if (state_ == State::authenticating) return "auth_check";
    return state_ == State::reading_first || request_started() ? "headers" : "idle";
  }

  void on_handshake(beast::error_code ec) {
    if (ec) {
      if (!server_->stopping && state_ != State::evicted) {
        const std::string reason = tls_failure_reason(ec);
        server_->stats->count_tls_handshake_failure(reason);
        log::debug("TLS handshake failed",
                   {{"address", peer()}, {"reason", reason}, {"err", ec.message()}});
      }
      return close_socket();
    }
    read(State::reading_first);
  }

  std::string peer() {
    beast::error_code ec;
    const auto ep = lowest().socket().remote_endpoint(ec);
    return ec ? std::string("?") : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  // `which`: reading_first or reading_next.
  void read(State which) {
    const bool first = which == State::reading_first;
    enter(which);
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_->config.max_request_bytes));
    parser_->body_limit(0);
    consumed_ = 0;
    line_ended_ = false;
    line_scanned_ = 0;
    buffer_.max_size(server_->config.max_request_bytes);
    request_deadline_ =
        Clock::now() + (first ? server_->config.read_timeout : server_->config.idle_timeout);
    // The first request's headers are due web.header_timeout after accept,
    // a later one's after its first byte (parse() sets it then).
    header_deadline_ =
        first ? accepted_ + server_->config.header_timeout : Clock::time_point::max();
    parse();
  }

  // The request is read here rather than with http::async_read so that its
  // size is known at every step: the parser's header_limit bounds only what
  // it holds unparsed (it takes complete lines as they come), while
  // web.max_request_bytes bounds the request line and headers together. A
  // request of exactly that size is served; a longer one is answered 431, or
  // 414 when its request line does not end within the limit, and 400 when
  // it is a body that goes past it.
  void parse() {
    // The parser takes the request line whole, so until its end has come
    // the buffer holds the request from its first byte; the bytes scanned
    // before are not scanned again.
    if (!line_ended_ && buffer_.size() > line_scanned_) {
      const auto data = buffer_.data();
      const auto* bytes = static_cast<const char*>(data.data());
      line_ended_ =
          std::memchr(bytes + line_scanned_, '\n', data.size() - line_scanned_) != nullptr;
      line_scanned_ = data.size();
    }
    while (buffer_.size() > 0) {
      beast::error_code ec;
      const std::size_t used = parser_->put(buffer_.data(), ec);
      consumed_ += used;
      buffer_.consume(used);
      if (ec == http::error::need_more) break;
      if (ec || parser_->is_done()) return on_read(ec);
      if (used == 0) break;  // a header with a (chunked) body to come
    }
    // More is needed, and all that is buffered belongs to this request.
    const std::size_t seen = consumed_ + buffer_.size();
    const std::size_t limit = server_->config.max_request_bytes;
    if (seen >= limit) {
      return on_read(parser_->is_header_done() ? http::error::body_limit
                                               : http::error::header_limit);
    }
    if (seen > 0 && header_deadline_ == Clock::time_point::max()) {
      header_deadline_ = Clock::now() + server_->config.header_timeout;
    }
    lowest().expires_at(parser_->is_header_done() ? request_deadline_
                                                  : std::min(request_deadline_, header_deadline_));
    stream_.async_read_some(buffer_.prepare(limit - seen),
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->on_read_some(ec, n);
                            });
  }

  void on_read_some(beast::error_code ec, std::size_t n) {
    if (state_ == State::evicted) return close_socket();
    buffer_.commit(n);
    if (ec == asio::error::eof) {
      // As in http::async_read: end_of_stream between requests,
      // partial_message within one.
      if (!parser_->got_some()) return on_read(http::error::end_of_stream);
      ec = {};
      parser_->put_eof(ec);
      return on_read(ec);
    }
    if (ec) return on_read(ec);
    parse();
  }

  void on_read(beast::error_code ec) {
    if (ec) {
      label_ = "other";
      if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
        if (!line_ended_) {
          return respond_error(http::status::uri_too_long, "request target too long\n");
        }
        return respond_error(http::status::request_header_fields_too_large,
                             "request headers too large\n");
      }
      if (ec == http::error::body_limit) {
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

  // The route is looked up first so a refused request is still counted
  // under its handler; the table is kept for the request, as a reload may
  // replace the server's while bcrypt runs.
  void handle() {
    enter(State::handling);
    const auto& req = parser_->get();
    reply_.head = req.method() == http::verb::head;
    reply_.keep_alive = req.keep_alive() && !server_->stopping;
    routes_ = server_->routes;
    route_ = routes_->find(std::string_view(req.target().data(), req.target().size()));
    label_ = route_ ? route_->path : "other";
    // As in exporter-toolkit, the rate limit comes before authentication,
    // so refused requests cost no bcrypt check.
    if (server_->limiter && !server_->limiter->allow()) {
      return respond(HttpResponse::text(http::status::too_many_requests, "Too Many Requests\n"));
    }
    const auto header = req[http::field::authorization];
    check_ = authenticate(security_->auth, std::string_view(header.data(), header.size()), source_,
                          {server_->verifier, &server_->auth_checks}, lowest().get_executor(),
                          [self = this->shared_from_this()](AuthOutcome outcome) {
                            self->on_authenticated(outcome);
                          });
    // Answered at once (no users, no or bad header, remembered credentials,
    // no place for a check), or waiting for bcrypt, and evictable meanwhile.
    if (check_) enter(State::authenticating);
  }

  void on_authenticated(AuthOutcome outcome) {
    check_.reset();
    if (state_ == State::evicted) return close_socket();
    enter(State::handling);
    if (outcome != AuthOutcome::ok) {
      server_->stats->count_auth_failure(auth_failure_reason(outcome));
      return respond(unauthorized_response());
    }
    const auto& req = parser_->get();
    const auto encoding = req[http::field::accept_encoding];
    const HttpRequest request{req.method(), std::string_view(encoding.data(), encoding.size()),
                              std::string_view(req.target().data(), req.target().size())};
    HttpRouter::dispatch(route_, request, [self = this->shared_from_this()](HttpResponse res) {
      self->respond(std::move(res));
    });
  }

  // The request was not read to its end: the connection is drained and
  // closed after the answer.
  void respond_error(http::status status, std::string body) {
    auto res = HttpResponse::text(status, std::move(body));
    res.close = true;
    reply_.drain = true;
    respond(std::move(res));
  }

  void respond(HttpResponse res) {
    server_->stats->count_request(label_, static_cast<unsigned>(res.status));
    if (res.close) {
      reply_.keep_alive = false;
      reply_.head = false;
    }
    static const auto kEmpty = std::make_shared<const std::string>();
    body_ = res.body ? std::move(res.body) : std::shared_ptr<const std::string>(kEmpty);
    auto fill = [&](auto& msg) {
      msg.version(11);
      msg.set(http::field::server, "rdma_exporter");
      msg.set(http::field::content_type, res.content_type);
      for (const auto& [k, v] : security_->headers) msg.set(k, v);
      for (const auto& [k, v] : res.headers) msg.set(k, v);
      msg.keep_alive(reply_.keep_alive);
      msg.content_length(body_->size());
    };
    if (reply_.head) {
      auto msg = std::make_shared<http::response<http::empty_body>>(res.status, 11);
      fill(*msg);
      return write(std::move(msg));
    }
    auto msg = std::make_shared<http::response<http::span_body<const char>>>(res.status, 11);
    msg->body() = http::span_body<const char>::value_type(body_->data(), body_->size());
    fill(*msg);
    write(std::move(msg));
  }

  template <typename Body>
  void write(std::shared_ptr<http::response<Body>> msg) {
    enter(State::writing);
    const bool close_after = !msg->keep_alive();
    lowest().expires_after(server_->config.write_timeout);
    http::async_write(stream_, *msg,
                      [self = this->shared_from_this(), msg, close_after](
                          beast::error_code ec, std::size_t) { self->on_write(ec, close_after); });
  }

  void on_write(beast::error_code ec, bool close_after) {
    body_.reset();
    routes_.reset();
    route_ = nullptr;
    if (ec) return close_socket();
    if (close_after || server_->stopping) return finish();
    read(State::reading_next);
  }

  // The server ends the connection after a response. Over TLS it says so
  // with close_notify first, waiting at most a second for the client's.
  // (A response was written: the handshake is done, and a session writing
  // is never evicted.)
  void finish() {
    if constexpr (kTls) {
      enter(State::closing);
      lowest().expires_after(
          std::min<Duration>(server_->config.write_timeout, std::chrono::seconds(1)));
      stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) {
        self->reply_.drain ? self->drain() : self->close_socket();
      });
      return;
    }
    reply_.drain ? drain() : close_socket();
  }

  // After a refused request the rest of it may still be on its way.
  // Closing a socket with unread data resets the connection, and the reset
  // can reach the client before it has read the answer. So the server only
  // stops sending, then reads and drops what arrives (at most kDrainBytes,
  // for at most kDrainTime) until the client closes too.
  void drain() {
    if (state_ == State::evicted) return close_socket();
    enter(State::closing);
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    lowest().expires_after(kDrainTime);
    buffer_.clear();
    drain_some(0);
  }

  void drain_some(std::size_t dropped) {
    lowest().async_read_some(
        buffer_.prepare(buffer_.max_size()),
        [self = this->shared_from_this(), dropped](beast::error_code ec, std::size_t n) {
          if (ec || dropped + n >= kDrainBytes) return self->close_socket();
          self->drain_some(dropped + n);
        });
  }

  void close_socket() {
    enter(State::closed);  // an evicted session stays evicted
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    lowest().socket().close(ignored);
  }

  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> parser_;
  std::size_t consumed_ = 0;  // bytes of the request in hand the parser took
  bool line_ended_ = false;   // its request line has arrived whole (or 414)
  std::size_t line_scanned_ = 0;
  std::shared_ptr<HttpServerState> server_;
  std::shared_ptr<const WebSecurity> security_;  // the one this connection was accepted with
  const asio::ip::address source_;               // the client's address
  const Clock::time_point accepted_;
  Clock::time_point request_deadline_;  // read_timeout or idle_timeout
  Clock::time_point header_deadline_;   // header_timeout; max() until the request begins
  State state_ = State::reading_first;
  HttpConnectionSlot slot_;  // its place and eviction rank, in step with state_ (enter())
  // The response in hand: how it is written and what follows it.
  struct Reply {
    bool head = false;        // to a HEAD request: no body
    bool keep_alive = false;  // the next request may follow on the connection
    bool drain = false;       // its request was refused before its end: drained, then closed
  } reply_;
  std::shared_ptr<const HttpRouter> routes_;  // the table of the request in hand
  const HttpRoute* route_ = nullptr;          // null: no route for its path
  std::string label_;                         // the handler label it is counted under
  std::shared_ptr<PendingAuthCheck> check_;   // its password check while it waits for one
  std::shared_ptr<const std::string> body_;   // the response being written
};

template <typename Session, typename... Args>
void launch(const std::shared_ptr<HttpServerState>& state, Args&&... args) {
  auto session = std::make_shared<Session>(state, std::forward<Args>(args)...);
  state->sessions.insert(session);
  session->start();
}

}  // namespace

void start_session(const std::shared_ptr<HttpServerState>& state,
                   std::shared_ptr<const WebSecurity> security, tcp::socket socket,
                   const asio::ip::address& source) {
  if (security->tls) {
    auto& tls = *security->tls;
    launch<HttpSession<beast::ssl_stream<beast::tcp_stream>>>(state, std::move(security), source,
                                                              std::move(socket), tls);
  } else {
    launch<HttpSession<beast::tcp_stream>>(state, std::move(security), source, std::move(socket));
  }
}

}  // namespace rdma_exporter
