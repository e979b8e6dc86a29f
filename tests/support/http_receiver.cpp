#include "tests/support/http_receiver.hpp"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace rdma_exporter::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

HttpReceiver::HttpReceiver() : acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}) {
  thread_ = std::thread([this] { accept_loop(); });
}

HttpReceiver::~HttpReceiver() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  changed_.notify_all();
  beast::error_code ignored;
  // A connection unblocks accept(); then every handler sees closing_.
  asio::ip::tcp::socket poke(io_);
  poke.connect(acceptor_.local_endpoint(), ignored);
  thread_.join();
  for (auto& t : handlers_) t.join();
}

std::string HttpReceiver::url() const {
  return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + "/v1/metrics";
}

void HttpReceiver::script(std::vector<Answer> first, Answer then) {
  std::lock_guard lock(mutex_);
  script_ = std::move(first);
  then_ = then;
}

std::vector<HttpReceiver::Request> HttpReceiver::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

bool HttpReceiver::wait_for_requests(std::size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
}

void HttpReceiver::accept_loop() {
  for (;;) {
    asio::ip::tcp::socket socket(io_);
    beast::error_code ec;
    acceptor_.accept(socket, ec);
    std::lock_guard lock(mutex_);
    if (closing_) return;
    if (ec) continue;
    handlers_.emplace_back([this, s = std::move(socket)]() mutable { handle(std::move(s)); });
  }
}

void HttpReceiver::handle(asio::ip::tcp::socket socket) {
  beast::flat_buffer buffer;
  http::request<http::string_body> req;
  beast::error_code ec;
  http::read(socket, buffer, req, ec);
  if (ec) return;
  Answer answer;
  {
    std::lock_guard lock(mutex_);
    Request r{std::string(req.target()), {}, req.body(), std::chrono::steady_clock::now()};
    for (const auto& f : req) r.headers[std::string(f.name_string())] = std::string(f.value());
    requests_.push_back(std::move(r));
    if (!script_.empty()) {
      answer = script_.front();
      script_.erase(script_.begin());
    } else {
      answer = then_;
    }
  }
  changed_.notify_all();
  if (answer.hang) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return closing_; });
    return;
  }
  http::response<http::string_body> res{static_cast<http::status>(answer.status), 11};
  if (!answer.retry_after.empty()) res.set(http::field::retry_after, answer.retry_after);
  res.body() = answer.status == 200 ? "" : "rejected for the test";
  res.prepare_payload();
  http::write(socket, res, ec);
}

}  // namespace rdma_exporter::testing
