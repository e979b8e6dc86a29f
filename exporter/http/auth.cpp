#include "exporter/http/auth.hpp"

#include <boost/asio/post.hpp>
#include <utility>

namespace rdma_exporter {

const char* auth_failure_reason(AuthOutcome outcome) {
  switch (outcome) {
    case AuthOutcome::missing:
      return "missing";
    case AuthOutcome::throttled:
      return "throttled";
    case AuthOutcome::ok:
    case AuthOutcome::invalid:
      break;
  }
  return "invalid";
}

namespace {

using AuthDone = std::function<void(AuthOutcome)>;

// Answered at once: no check queued.
std::shared_ptr<PendingAuthCheck> answer(const AuthDone& done, AuthOutcome outcome) {
  done(outcome);
  return nullptr;
}

// The check runs on the verifier's thread and gives its place back there;
// its outcome goes back to `executor`.
std::shared_ptr<PendingAuthCheck> queue_check(const std::shared_ptr<BasicAuth>& auth,
                                              Credentials credentials, AuthChecks::Place place,
                                              boost::asio::thread_pool& thread,
                                              const boost::asio::any_io_executor& executor,
                                              AuthDone done) {
  auto check = std::make_shared<PendingAuthCheck>();
  boost::asio::post(thread, [auth, credentials = std::move(credentials), executor,
                             done = std::move(done), place = std::move(place), check]() mutable {
    const bool ok = !check->abandoned() && auth->verify(credentials);
    place = {};  // the next check may be queued before this answer is handled
    boost::asio::post(executor, [done = std::move(done), ok] {
      done(ok ? AuthOutcome::ok : AuthOutcome::invalid);
    });
  });
  return check;
}

}  // namespace

std::shared_ptr<PendingAuthCheck> authenticate(const std::shared_ptr<BasicAuth>& auth,
                                               std::string_view authorization,
                                               const boost::asio::ip::address& source,
                                               const AuthVerifier& verifier,
                                               const boost::asio::any_io_executor& executor,
                                               AuthDone done) {
  if (!auth) return answer(done, AuthOutcome::ok);
  auto credentials = parse_basic_authorization(authorization);
  if (!credentials) {
    return answer(done, authorization.empty() ? AuthOutcome::missing : AuthOutcome::invalid);
  }
  if (auth->known_good(*credentials)) return answer(done, AuthOutcome::ok);
  if (verifier.thread == nullptr || verifier.checks == nullptr) {
    return answer(done, AuthOutcome::invalid);
  }
  auto place = verifier.checks->take(source);
  if (!place) return answer(done, AuthOutcome::throttled);
  return queue_check(auth, std::move(*credentials), std::move(*place), *verifier.thread, executor,
                     std::move(done));
}

HttpResponse unauthorized_response() {
  auto res = HttpResponse::text(boost::beast::http::status::unauthorized, "unauthorized\n");
  res.headers.emplace_back("WWW-Authenticate", "Basic realm=\"rdma_exporter\", charset=\"UTF-8\"");
  return res;
}

}  // namespace rdma_exporter
