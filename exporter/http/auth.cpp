#include "exporter/http/auth.hpp"

#include <boost/asio/post.hpp>
#include <utility>

namespace rdma_exporter {

const char* auth_failure_reason(AuthOutcome outcome) {
  return outcome == AuthOutcome::missing ? "missing" : "invalid";
}

void authenticate(const std::shared_ptr<BasicAuth>& auth, std::string_view authorization,
                  boost::asio::thread_pool* verifier, const boost::asio::any_io_executor& executor,
                  std::function<void(AuthOutcome)> done) {
  if (!auth) return done(AuthOutcome::ok);
  auto credentials = parse_basic_authorization(authorization);
  if (!credentials)
    return done(authorization.empty() ? AuthOutcome::missing : AuthOutcome::invalid);
  if (auth->known_good(*credentials)) return done(AuthOutcome::ok);
  if (verifier == nullptr) return done(AuthOutcome::invalid);
  // Each connection has at most one request in flight, so this queue is
  // bounded by web.max_connections.
  boost::asio::post(*verifier, [auth, credentials = std::move(*credentials), executor,
                                done = std::move(done)]() mutable {
    const bool ok = auth->verify(credentials);
    boost::asio::post(executor, [done = std::move(done), ok] {
      done(ok ? AuthOutcome::ok : AuthOutcome::invalid);
    });
  });
}

HttpResponse unauthorized_response() {
  auto res = HttpResponse::text(boost::beast::http::status::unauthorized, "unauthorized\n");
  res.headers.emplace_back("WWW-Authenticate", "Basic realm=\"rdma_exporter\", charset=\"UTF-8\"");
  return res;
}

}  // namespace rdma_exporter
