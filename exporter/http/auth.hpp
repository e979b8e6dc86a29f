#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <memory>
#include <string_view>

#include "exporter/http/basic_auth.hpp"
#include "exporter/http/router.hpp"

namespace rdma_exporter {

// Basic auth of a request. With users configured, every path is behind it,
// as in exporter-toolkit: an unauthenticated client learns nothing, not even
// which paths exist.
enum class AuthOutcome { ok, missing, invalid };

// The reason label of rdma_exporter_http_auth_failures_total.
const char* auth_failure_reason(AuthOutcome outcome);

// Checks an Authorization header value against `auth` (null: no users, so
// every request passes) and calls `done` with the outcome. A missing or
// malformed header, and credentials verified before, are answered at once;
// the others are checked with bcrypt on `verifier` (one thread, so a flood
// of wrong passwords costs at most one core and never blocks the event loop)
// and answered on `executor`. Without a verifier the answer is invalid.
void authenticate(const std::shared_ptr<BasicAuth>& auth, std::string_view authorization,
                  boost::asio::thread_pool* verifier, const boost::asio::any_io_executor& executor,
                  std::function<void(AuthOutcome)> done);

// 401 with the challenge.
HttpResponse unauthorized_response();

}  // namespace rdma_exporter
