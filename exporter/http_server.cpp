#include "exporter/http_server.hpp"

#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>
#include <utility>

#include "common/log.hpp"
#include "exporter/collection.hpp"
#include "exporter/exposition.hpp"

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

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(tcp::socket socket, std::shared_ptr<HttpServer::State> server)
      : stream_(std::move(socket)),
        buffer_(server->config.max_request_bytes),
        server_(std::move(server)) {
    server_->stats->set_open_connections(++server_->open);
  }
  ~HttpSession() {
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

  void start() { read(); }

  // On shutdown: a connection waiting for its next request, with no byte of
  // it received, is closed now; one with a request or response in flight
  // closes after answering it.
  void close_if_idle() {
    beast::error_code ec;
    const bool request_started = buffer_.size() > 0 || stream_.socket().available(ec) > 0 ||
                                 (parser_ && parser_->got_some());
    if (state_ == State::reading && !request_started) {
      beast::error_code ignored;
      stream_.socket().close(ignored);
    }
  }

 private:
  enum class State { reading, handling, writing };

  void read() {
    state_ = State::reading;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_->config.max_request_bytes));
    parser_->body_limit(0);
    stream_.expires_after(first_ ? server_->config.read_timeout : server_->config.idle_timeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
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
      return close();  // timeout, end of stream, reset, shutdown
    }
    handle();
  }

  void handle() {
    state_ = State::handling;
    const auto& req = parser_->get();
    const std::string_view target(req.target().data(), req.target().size());
    const std::string_view path = target.substr(0, target.find('?'));
    const bool head = req.method() == http::verb::head;
    const bool allowed = req.method() == http::verb::get || head;
    keep_alive_ = req.keep_alive() && !server_->stopping;
    head_ = head;

    if (path == "/-/reload") return handle_reload(req.method());

    std::string handler;
    if (path == "/metrics")
      handler = "/metrics";
    else if (path == "/")
      handler = "/";
    else if (path == "/healthz")
      handler = "/healthz";

    if (handler.empty()) {
      server_->stats->count_request("other", 404);
      return respond(http::status::not_found, "text/plain; charset=utf-8", "not found\n");
    }
    if (!allowed) {
      server_->stats->count_request(handler, 405);
      return respond(http::status::method_not_allowed, "text/plain; charset=utf-8",
                     "method not allowed\n", {{"Allow", "GET, HEAD"}});
    }
    if (handler == "/") {
      server_->stats->count_request(handler, 200);
      return respond(http::status::ok, "text/html; charset=utf-8", kLanding);
    }
    if (handler == "/healthz") {
      server_->stats->count_request(handler, 200);
      return respond(http::status::ok, "text/plain; charset=utf-8", "OK\n");
    }
    const auto encoding = req[http::field::accept_encoding];
    const bool gzip = accepts_gzip(std::string_view(encoding.data(), encoding.size()));
    server_->cache->get([self = shared_from_this(), gzip](std::shared_ptr<const Snapshot> snap) {
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
    server_->reload([self = shared_from_this(), handler](bool ok, std::string message) {
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
    stream_.expires_after(server_->config.write_timeout);
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res, close_after](
                          beast::error_code ec, std::size_t) { self->on_write(ec, close_after); });
  }

  void on_write(beast::error_code ec, bool close_after) {
    snapshot_.reset();
    owned_body_.clear();
    if (ec || close_after || server_->stopping) return close();
    read();
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> parser_;
  std::shared_ptr<HttpServer::State> server_;
  State state_ = State::reading;
  bool first_ = true;
  bool keep_alive_ = false;
  bool head_ = false;
  std::shared_ptr<const Snapshot> snapshot_;
  std::string owned_body_;
};

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
}

HttpServer::HttpServer(asio::io_context& io, const Config::Web& config, SnapshotCache& cache)
    : io_(io), state_(std::make_shared<State>()), acceptor_(io) {
  state_->config = config;
  state_->cache = &cache;
}

HttpServer::~HttpServer() = default;

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
    if (state->open >= state->config.max_connections) {
      state->stats->count_rejected_connection();
      static constexpr std::string_view kBusy =
          "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      beast::error_code ignored;
      socket.non_blocking(true, ignored);
      socket.write_some(asio::buffer(kBusy.data(), kBusy.size()), ignored);
      socket.close(ignored);
    } else {
      auto session = std::make_shared<HttpSession>(std::move(socket), state);
      state->sessions.insert(session);
      session->start();
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
