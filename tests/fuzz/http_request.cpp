// Fuzz harness: an HTTP request as the exporter's session reads it, without a
// socket. The bytes go through Boost.Beast's request parser with the
// session's limits; a request that parses is authenticated (basic auth
// against one user, no bcrypt: only credentials known good pass) and routed
// through the exporter's routing table and handlers, with a snapshot cache
// that serves a fixed exposition. Every request must get exactly one answer.

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "exporter/http/auth.hpp"
#include "exporter/http/basic_auth.hpp"
#include "exporter/http/handlers.hpp"
#include "exporter/snapshot_cache.hpp"

using namespace rdma_exporter;
namespace http = boost::beast::http;

namespace {

constexpr std::size_t kMaxRequestBytes = 8192;  // web.max_request_bytes' default

// Made once and kept for the process (never destroyed: the cache's worker
// thread must not outlive what it reads).
struct Server {
  boost::asio::io_context io;
  SnapshotCache cache{io,
                      [] {
                        auto snapshot = std::make_shared<Snapshot>();
                        snapshot->text = "rdma_exporter_up 1\n";
                        snapshot->gzip = std::string("\x1f\x8b", 2);
                        return std::shared_ptr<const Snapshot>(std::move(snapshot));
                      },
                      Duration{std::chrono::hours(1)},
                      [] { return std::chrono::steady_clock::time_point{}; }};
  std::shared_ptr<const HttpRouter> routes = exporter_routes(
      cache, [](std::function<void(bool, std::string)> done) { done(true, "reloaded"); });
  std::shared_ptr<BasicAuth> auth = std::make_shared<BasicAuth>(
      std::map<std::string, std::string>{{"prometheus", "$2y$10$" + std::string(53, 'a')}});
};

// Runs the event loop until the request has its answer; aborts when a
// request gets none or more than one.
void answer(Server& server, const http::request<http::empty_body>& req) {
  const auto target = req.target();
  const HttpRoute* route = server.routes->find(std::string_view(target.data(), target.size()));
  const auto authorization = req[http::field::authorization];
  const auto encoding = req[http::field::accept_encoding];
  (void)accepts_gzip(std::string_view(encoding.data(), encoding.size()));
  int answers = 0;
  const HttpRequest request{req.method(), std::string_view(encoding.data(), encoding.size()),
                            std::string_view(target.data(), target.size())};
  // No check thread: what would be checked with bcrypt is answered invalid.
  authenticate(server.auth, std::string_view(authorization.data(), authorization.size()),
               boost::asio::ip::make_address("192.0.2.1"), AuthVerifier{}, server.io.get_executor(),
               [&](AuthOutcome outcome) {
                 // Routed either way, so the handlers see every request.
                 (void)auth_failure_reason(outcome);
                 HttpRouter::dispatch(route, request, [&](HttpResponse) { ++answers; });
               });
  server.io.restart();
  server.io.run();
  if (answers != 1) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static Server& server = *new Server;
  if (size > kMaxRequestBytes) return 0;  // the session refuses it before parsing ends

  http::request_parser<http::empty_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(kMaxRequestBytes));
  parser.body_limit(0);
  boost::beast::error_code ec;
  std::size_t offset = 0;
  // As the session feeds it: what is buffered, until the parser wants more.
  while (offset < size && !parser.is_done()) {
    const std::size_t used = parser.put(boost::asio::buffer(data + offset, size - offset), ec);
    offset += used;
    if (ec == http::error::need_more) {
      ec = {};
      break;
    }
    if (ec || used == 0) break;
  }
  if (!ec && !parser.is_done() && parser.got_some()) parser.put_eof(ec);
  if (ec || !parser.is_done()) return 0;

  (void)parse_basic_authorization(
      std::string_view(parser.get()[http::field::authorization].data(),
                       parser.get()[http::field::authorization].size()));
  answer(server, parser.get());
  return 0;
}
