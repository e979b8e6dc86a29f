#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <memory>
#include <string_view>

#include "exporter/http/auth_checks.hpp"
#include "exporter/http/basic_auth.hpp"
#include "exporter/http/router.hpp"

namespace rdma_exporter {

// Basic auth of a request. With users configured, every path is behind it,
// as in exporter-toolkit: an unauthenticated client learns nothing, not even
// which paths exist.
enum class AuthOutcome { ok, missing, invalid, throttled };

// The reason label of rdma_exporter_http_auth_failures_total.
const char* auth_failure_reason(AuthOutcome outcome);

// Where bcrypt checks run: one thread (so a flood of wrong passwords costs at
// most one core and never blocks the event loop), and the places of its
// queue. Null members: no checks (every check is answered invalid).
struct AuthVerifier {
  boost::asio::thread_pool* thread = nullptr;
  AuthChecks* checks = nullptr;
};

// A check queued for a request. Its connection may be evicted while it
// waits: abandon() then spares the thread the check if it has not begun.
class PendingAuthCheck {
 public:
  void abandon() { abandoned_ = true; }
  bool abandoned() const { return abandoned_; }

 private:
  std::atomic<bool> abandoned_{false};
};

// Checks an Authorization header value from `source` against `auth` (null:
// no users, so every request passes) and calls `done` with the outcome. A
// missing or malformed header, and credentials verified before, are answered
// at once, and so is a request whose check finds no place in the queue
// (throttled); the others are checked with bcrypt on the verifier's thread
// and answered on `executor`. Returns the check when one was queued (then
// `done` has not run yet), null when answered at once.
std::shared_ptr<PendingAuthCheck> authenticate(const std::shared_ptr<BasicAuth>& auth,
                                               std::string_view authorization,
                                               const boost::asio::ip::address& source,
                                               const AuthVerifier& verifier,
                                               const boost::asio::any_io_executor& executor,
                                               std::function<void(AuthOutcome)> done);

// 401 with the challenge.
HttpResponse unauthorized_response();

}  // namespace rdma_exporter
