// exporter/http/auth: which requests are answered at once and which wait for
// a bcrypt check on the verifier's thread, the bounded queue of those checks
// (throttled when it has no place) and abandoned checks, with the password
// check held by the test (tests/support/password_gate.hpp).

#include "exporter/http/auth.hpp"

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/password_gate.hpp"

namespace rdma_exporter {
namespace {

using boost::asio::ip::make_address;
using testing::OpenAtExit;
using testing::PasswordGate;

const auto kA = make_address("192.0.2.1");
const auto kB = make_address("192.0.2.2");
const auto kC = make_address("2001:db8::1");

// "Basic " + base64 of prom:good and prom:bad.
constexpr const char* kGood = "Basic cHJvbTpnb29k";
constexpr const char* kBad = "Basic cHJvbTpiYWQ=";

// authenticate() with a verifier thread of its own; outcomes come back on
// an event loop the test runs.
class Authenticator {
 public:
  explicit Authenticator(PasswordGate& gate, int per_source = 2, int total = 3)
      : checks_(per_source, total),
        auth_(std::make_shared<BasicAuth>(std::map<std::string, std::string>{{"prom", "hash"}}, 256,
                                          gate.matcher())) {}
  ~Authenticator() { thread_.join(); }

  // The request's check, null when it was answered at once (`answered`).
  std::shared_ptr<PendingAuthCheck> start(const std::string& header,
                                          const boost::asio::ip::address& source) {
    return authenticate(auth_, header, source, {&thread_, &checks_}, io_.get_executor(),
                        [this](AuthOutcome outcome) { answered_.push_back(outcome); });
  }
  // Runs the event loop until `n` outcomes in all have come.
  const std::vector<AuthOutcome>& wait_for(std::size_t n) {
    while (answered_.size() < n && io_.run_one_for(std::chrono::seconds(5)) != 0) {
    }
    return answered_;
  }
  const std::vector<AuthOutcome>& answered() const { return answered_; }
  const AuthChecks& checks() const { return checks_; }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{
      io_.get_executor()};
  boost::asio::thread_pool thread_{1};
  AuthChecks checks_;
  std::shared_ptr<BasicAuth> auth_;
  std::vector<AuthOutcome> answered_;
};

using O = AuthOutcome;

TEST(Authenticate, WithoutUsersOrCredentialsItIsAnsweredAtOnce) {
  boost::asio::io_context io;
  std::optional<AuthOutcome> got;
  auto record = [&](AuthOutcome o) { got = o; };
  EXPECT_EQ(authenticate(nullptr, "", kA, {}, io.get_executor(), record), nullptr);
  EXPECT_EQ(got, O::ok);
  auto auth = std::make_shared<BasicAuth>(std::map<std::string, std::string>{{"prom", "x"}});
  EXPECT_EQ(authenticate(auth, "", kA, {}, io.get_executor(), record), nullptr);
  EXPECT_EQ(got, O::missing);
  EXPECT_EQ(authenticate(auth, "Bearer x", kA, {}, io.get_executor(), record), nullptr);
  EXPECT_EQ(got, O::invalid);
  // Without a verifier, credentials that need a check are invalid.
  EXPECT_EQ(authenticate(auth, kBad, kA, {}, io.get_executor(), record), nullptr);
  EXPECT_EQ(got, O::invalid);
  EXPECT_STREQ(auth_failure_reason(O::missing), "missing");
  EXPECT_STREQ(auth_failure_reason(O::invalid), "invalid");
  EXPECT_STREQ(auth_failure_reason(O::throttled), "throttled");
}

TEST(Authenticate, ChecksAreQueuedTwoPerSourceAndTheRestThrottledAtOnce) {
  PasswordGate gate("good");
  Authenticator a(gate);  // 2 per source, 3 in all
  OpenAtExit opened(gate);
  ASSERT_NE(a.start(kGood, kA), nullptr);  // checked once, then remembered
  ASSERT_EQ(a.wait_for(1), (std::vector<O>{O::ok}));

  gate.close();
  ASSERT_NE(a.start(kBad, kA), nullptr);
  ASSERT_TRUE(gate.wait_for_checks(2));    // running
  ASSERT_NE(a.start(kBad, kA), nullptr);   // queued behind it
  EXPECT_EQ(a.start(kBad, kA), nullptr);   // the source's third: no place
  EXPECT_EQ(a.start(kGood, kA), nullptr);  // remembered: no check, no wait
  ASSERT_NE(a.start(kBad, kC), nullptr);   // another source: the last place
  EXPECT_EQ(a.start(kBad, kB), nullptr);   // none left in all
  EXPECT_EQ(a.answered(), (std::vector<O>{O::ok, O::throttled, O::ok, O::throttled}));
  EXPECT_EQ(a.checks().held(), 3);

  gate.open();
  EXPECT_EQ(a.wait_for(7), (std::vector<O>{O::ok, O::throttled, O::ok, O::throttled, O::invalid,
                                           O::invalid, O::invalid}));
  // Each check gives its place back before its outcome is handled.
  EXPECT_EQ(a.checks().held(), 0);
  EXPECT_EQ(gate.checks(), 4);
  ASSERT_NE(a.start(kBad, kB), nullptr);
  EXPECT_EQ(a.wait_for(8).back(), O::invalid);
}

TEST(Authenticate, AnAbandonedCheckIsNotRunAndGivesItsPlaceBack) {
  PasswordGate gate("good");
  Authenticator a(gate);
  OpenAtExit opened(gate);
  gate.close();
  ASSERT_NE(a.start(kBad, kA), nullptr);
  ASSERT_TRUE(gate.wait_for_checks(1));
  auto queued = a.start(kGood, kB);
  ASSERT_NE(queued, nullptr);
  queued->abandon();  // its connection was evicted
  gate.open();
  EXPECT_EQ(a.wait_for(2), (std::vector<O>{O::invalid, O::invalid}));
  EXPECT_EQ(gate.checks(), 1);  // the abandoned one never reached bcrypt
  EXPECT_EQ(a.checks().held(), 0);
  // Nor was it remembered: the same credentials are checked again.
  EXPECT_NE(a.start(kGood, kB), nullptr);
  EXPECT_EQ(a.wait_for(3).back(), O::ok);
}

}  // namespace
}  // namespace rdma_exporter
