// Who gets in at the probe's responder: the handshake and session budgets
// and the per-group token buckets (SourceTable, on a fake clock; the groups
// are common/address's source_group()), a responder on loopback facing many
// loopback sources (Linux routes all of 127/8 to lo, so a client bound to
// 127.0.0.2 is another source), and one discovery per target address.

#include "exporter/probe/control/admission.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <optional>
#include <thread>

#include "common/token_bucket.hpp"
#include "exporter/probe/control/channel.hpp"
#include "exporter/probe/control/responder.hpp"
#include "exporter/probe/plan/options.hpp"
#include "exporter/probe/plan/targets.hpp"
#include "exporter/probe/service.hpp"
#include "exporter/probe/wire/auth.hpp"
#include "tests/support/control_client.hpp"
#include "tests/support/responder_fixture.hpp"
#include "tests/support/snapshot_query.hpp"

namespace rdma_exporter::probe {
namespace {

using boost::asio::ip::make_address;
using boost::asio::ip::tcp;
using rdma_exporter::testing::closed_by_peer;
using rdma_exporter::testing::is_hello;
using rdma_exporter::testing::metrics_of;
using rdma_exporter::testing::read_message;
using rdma_exporter::testing::sample;
using rdma_exporter::testing::series_count;
using Verdict = SourceTable::Verdict;

TEST(ProbeAdmissionTokenBucket, StartsFullGainsOneTokenPerIntervalUpToItsCapacity) {
  using std::chrono::seconds;
  const auto t0 = TokenBucket::Clock::time_point() + std::chrono::hours(1);
  TokenBucket b(3, seconds(10), t0);
  EXPECT_TRUE(b.full(t0));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(b.take(t0)) << i;
  EXPECT_FALSE(b.take(t0));
  EXPECT_FALSE(b.full(t0));
  EXPECT_DOUBLE_EQ(b.tokens(t0 + seconds(5)), 0.5);
  EXPECT_FALSE(b.take(t0 + seconds(5)));
  EXPECT_TRUE(b.take(t0 + seconds(10)));
  EXPECT_FALSE(b.take(t0 + seconds(10)));
  EXPECT_FALSE(b.full(t0 + seconds(30)));
  EXPECT_TRUE(b.full(t0 + seconds(40)));
  EXPECT_DOUBLE_EQ(b.tokens(t0 + seconds(1000)), 3);  // never more than its capacity
  // A clock that goes back gains nothing.
  EXPECT_TRUE(b.take(t0 + seconds(1000)));
  EXPECT_DOUBLE_EQ(b.tokens(t0), 2);
}

// A SourceTable driven step by step on a clock that only moves when told.
struct Step {
  enum Kind { open, authenticate, close, wait } kind;
  std::string group;                    // open
  SourceTable::Ticket ticket = 0;       // authenticate, close
  std::chrono::seconds elapse{0};       // wait
  Verdict verdict = Verdict::admitted;  // open: expected
  SourceTable::Ticket evicted = 0;      // open: the handshake it ends (0: none)
  bool authenticated = true;            // authenticate: expected
};
Step open(std::string group, SourceTable::Ticket evicted = 0) {
  return {Step::open, std::move(group), 0, {}, Verdict::admitted, evicted};
}
Step refused(std::string group, Verdict why) {
  return {Step::open, std::move(group), 0, {}, why};
}
Step auth(SourceTable::Ticket t, bool ok = true) {
  return {Step::authenticate, "", t, {}, Verdict::admitted, 0, ok};
}
Step close(SourceTable::Ticket t) {
  return {Step::close, "", t};
}
Step wait(std::chrono::seconds s) {
  return {Step::wait, "", 0, s};
}

struct TableLimits {
  ResponderLimits responder;
  std::size_t max_groups;
};

TableLimits limits(int handshakes, int handshakes_per_group, int sessions = 100,
                   int sessions_per_group = 100, int per_minute = 1000, std::size_t groups = 100) {
  TableLimits l;
  l.responder.max_handshakes = handshakes;
  l.responder.max_handshakes_per_source = handshakes_per_group;
  l.responder.max_sessions = sessions;
  l.responder.max_sessions_per_source = sessions_per_group;
  l.responder.setups_per_minute_per_source = per_minute;
  l.max_groups = groups;
  return l;
}

struct TableCase {
  const char* name;
  TableLimits limits;
  std::vector<Step> steps;
  int handshakes;  // at the end
  int sessions;
};

TEST(ProbePinBudget, TakesWhatFitsAndGetsItBack) {
  PinBudget b(1000);
  EXPECT_TRUE(b.take(600));
  EXPECT_FALSE(b.take(401));  // would pass the budget: nothing taken
  EXPECT_EQ(b.held(), 600u);
  EXPECT_TRUE(b.take(400));  // exactly the budget
  EXPECT_EQ(b.held(), 1000u);
  EXPECT_FALSE(b.take(1));
  b.give(600);
  EXPECT_EQ(b.held(), 400u);
  EXPECT_TRUE(b.take(600));
  b.give(5000);  // more than held: back to nothing, never below
  EXPECT_EQ(b.held(), 0u);
  // A size that would wrap a sum around is refused too.
  EXPECT_FALSE(b.take(~uint64_t{0}));
  EXPECT_EQ(b.held(), 0u);
}

TEST(ProbeAdmissionSourceTable, Steps) {
  using std::chrono::seconds;
  const TableCase cases[] = {
      // Tickets count the admitted connections: 1, 2, 3, ...
      {"a group at its handshake cap ends its own oldest",
       limits(10, 2),
       {open("a"), open("a"), open("a", 1), open("b"), open("a", 2)},
       3,
       0},
      {"a full budget ends the oldest handshake of the group that holds the most",
       limits(4, 10),
       {open("a"), open("a"), open("a"), open("b"), open("c", 1), open("c", 2),
        // a: 3, b: 4, c: 5 6
        open("d", 5)},
       4,
       0},
      {"of groups holding as many, the one with the oldest handshake",
       limits(2, 10),
       {open("a"), open("b"), open("c", 1), open("a", 2)},
       2,
       0},
      {"a newcomer always gets in however many groups hold the budget",
       limits(3, 10),
       {open("x"), open("y"), open("z"), open("legit", 1), open("x", 2), open("y", 3),
        // legit's handshake (4) ends only once it is the oldest of the groups
        // that hold the most.
        open("z", 4)},
       3,
       0},
      {"authenticated set-ups leave the handshake budget",
       limits(2, 2),
       {open("a"), open("a"), auth(1), auth(2), open("a"), open("a"), open("a", 3)},
       2,
       2},
      {"session caps are taken when a set-up is authenticated",
       limits(10, 10, /*sessions=*/2, /*per group=*/1),
       {open("a"), open("a"), open("b"), open("c"), auth(1), auth(2, false), auth(3),
        // Refused a session, 4 stays a handshake until it is closed or let in.
        auth(4, false), close(1), auth(2), auth(4, false), close(3), auth(4)},
       0,
       2},
      {"closing releases a handshake or a session; an ended ticket is ignored",
       limits(1, 1),
       {open("a"), open("a", 1), close(1), auth(2), close(2), close(2), open("a")},
       1,
       0},
      {"connections per minute per group",
       limits(100, 100, 100, 100, /*per minute=*/2),
       {open("a"), open("a"), refused("a", Verdict::rate), open("b"), wait(seconds(30)), open("a"),
        refused("a", Verdict::rate)},
       4,
       0},
      {"a zero handshake budget refuses", limits(0, 10), {refused("a", Verdict::capacity)}, 0, 0},
      {"a full table forgets a group that holds nothing, the least recently connected",
       limits(10, 10, 10, 10, /*per minute=*/1, /*groups=*/2),
       {open("a"), close(1), open("b"),
        // a is idle (its bucket empty), b holds a handshake: a goes.
        open("c"),
        // b and c hold handshakes: nothing can go.
        refused("a", Verdict::capacity), close(2), close(3),
        // Both idle with empty buckets: b connected before c.
        open("a"), refused("c", Verdict::rate)},
       1,
       0},
      {"an idle group with a full bucket goes before one that connected less recently",
       limits(10, 10, 10, 10, /*per minute=*/2, /*groups=*/2),
       {open("x"), close(1), open("x"), close(2), wait(seconds(10)), open("y"), close(3),
        wait(seconds(30)),
        // x connected first but its bucket is not full again (1.3 of 2); y's
        // is: y goes, losing nothing, and x keeps what it spent.
        open("z"), open("x"), refused("x", Verdict::rate)},
       2,
       0},
      {"many addresses cannot keep a new source out",
       limits(10, 10, 10, 10, /*per minute=*/1, /*groups=*/2),
       {open("a"), close(1), open("b"), close(2), open("c"), close(3), open("d"), close(4),
        open("e")},
       1,
       0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto now = std::chrono::steady_clock::time_point() + std::chrono::hours(1);
    SourceTable table(c.limits.responder, c.limits.max_groups, [&now] { return now; });
    for (std::size_t i = 0; i < c.steps.size(); ++i) {
      const Step& s = c.steps[i];
      SCOPED_TRACE("step " + std::to_string(i));
      switch (s.kind) {
        case Step::open: {
          const auto a = table.open(s.group);
          EXPECT_EQ(a.verdict, s.verdict);
          EXPECT_EQ(a.evicted.value_or(0), s.evicted);
          break;
        }
        case Step::authenticate:
          EXPECT_EQ(table.authenticate(s.ticket), s.authenticated);
          break;
        case Step::close:
          table.close(s.ticket);
          break;
        case Step::wait:
          now += s.elapse;
          break;
      }
      EXPECT_LE(table.handshakes(), c.limits.responder.max_handshakes);
      EXPECT_LE(table.sessions(), c.limits.responder.max_sessions);
      EXPECT_LE(table.groups(), c.limits.max_groups);
    }
    EXPECT_EQ(table.handshakes(), c.handshakes);
    EXPECT_EQ(table.sessions(), c.sessions);
  }
}

TEST(ProbeAdmissionSourceTable, CountsByGroup) {
  SourceTable table(limits(10, 10).responder);
  const auto a1 = table.open("a").ticket;
  table.open("a");
  table.open("b");
  ASSERT_TRUE(table.authenticate(a1));
  EXPECT_EQ(table.handshakes("a"), 1);
  EXPECT_EQ(table.sessions("a"), 1);
  EXPECT_EQ(table.handshakes("b"), 1);
  EXPECT_EQ(table.sessions("b"), 0);
  EXPECT_EQ(table.handshakes("nobody"), 0);
  EXPECT_TRUE(table.is_session(a1));
  EXPECT_EQ(table.groups(), 2u);
}

// The responder's defaults are the configuration's.
TEST(ProbeAdmissionDefaults, ResponderSettingsAreTheShippedOptions) {
  const ResponderSettings rs;
  const ProbeOptions o;
  EXPECT_EQ(rs.limits, o.responder);
  // As docs/probe.md gives them.
  EXPECT_EQ(rs.limits.max_sessions, 1024);
  EXPECT_EQ(rs.limits.max_sessions_per_source, 128);
  EXPECT_EQ(rs.limits.setups_per_minute_per_source, 120);
  EXPECT_EQ(rs.limits.max_message_size, 1u << 20);
  EXPECT_EQ(rs.limits.idle_timeout, std::chrono::seconds(60));
  EXPECT_EQ(rs.limits.max_handshakes, 256);
  EXPECT_EQ(rs.limits.max_handshakes_per_source, 64);
  EXPECT_EQ(rs.limits.handshake_timeout, std::chrono::seconds(1));
}

// A responder without an RDMA device on 127.0.0.1, and blocking clients
// from any loopback address.
class ProbeAdmissionResponderTest : public rdma_exporter::testing::ResponderFixture {
 protected:
  static void SetUpTestSuite() {
    // Thousands of connections, both ends in this process.
    rlimit r{};
    if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
      r.rlim_cur = std::min<rlim_t>(r.rlim_max, 65536);
      ::setrlimit(RLIMIT_NOFILE, &r);
    }
  }
  static bool can_open(rlim_t files) {
    rlimit r{};
    return ::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur >= files;
  }

  static std::optional<wire::RejectCode> reject_code(const std::optional<wire::Message>& m) {
    if (!m || !std::holds_alternative<wire::Reject>(*m)) return std::nullopt;
    return std::get<wire::Reject>(*m).code;
  }

  // A set-up for port 1 of mlx5_0, made for the address `s` is connected
  // to and signed with `secret` over the hello's nonce (none: unsigned).
  static wire::Setup setup_for(const tcp::socket& s, const wire::Hello& hello,
                               const std::string& secret = "") {
    wire::Setup setup;
    setup.op = Op::write;
    setup.size = 64;
    setup.peer.qpn = 17;
    setup.device = "mlx5_0";
    setup.port = 1;
    setup.nonce = random_nonce();
    setup.dialled = dialled_of(s, Side::remote);
    if (!secret.empty()) setup.macs = {setup_mac(secret, hello.nonce, setup)};
    return setup;
  }

  // A prober's attempt from 127.0.0.1: the hello, then a set-up; what the
  // responder answered the set-up with (nullopt: no hello, or no answer).
  // `meanwhile` runs between the hello and the set-up.
  std::optional<wire::RejectCode> attempt(const std::string& secret = "",
                                          const std::function<void()>& meanwhile = {}) {
    auto s = connect();
    const auto hello = read_message(s);
    if (!is_hello(hello)) return std::nullopt;
    if (meanwhile) meanwhile();
    const wire::Setup setup = setup_for(s, std::get<wire::Hello>(*hello), secret);
    boost::asio::write(s, boost::asio::buffer(wire::encode(setup)));
    return reject_code(read_message(s));
  }

  // `per_source` silent connections from each of 127.0.0.2, 127.0.0.3, ...
  // (`sources` of them); they never send a byte.
  void silent(int sources, int per_source, std::vector<tcp::socket>& held) {
    for (int s = 0; s < sources; ++s) {
      const std::string source = "127.0.0." + std::to_string(2 + s);
      for (int i = 0; i < per_source; ++i) held.push_back(connect(source));
    }
  }

  // Runs `f` on the responder's loop and returns its result.
  template <typename F>
  auto on_loop(F f) {
    std::promise<decltype(f())> result;
    boost::asio::post(io_, [&] { result.set_value(f()); });
    return result.get_future().get();
  }

  // The shipped caps, and a handshake deadline long enough that nothing
  // times out while a test runs.
  static ResponderSettings shipped() {
    ResponderSettings rs;
    rs.limits.max_sessions = 1024;
    rs.limits.max_sessions_per_source = 128;
    rs.limits.setups_per_minute_per_source = 120;
    rs.limits.handshake_timeout = std::chrono::minutes(5);
    return rs;
  }
};

// 9 sources × 120 connections that never speak fill more than every
// session slot there is; a prober from another source still gets its hello
// and its set-up answered (refused only for want of a device).
TEST_F(ProbeAdmissionResponderTest, SilentConnectionsFromNineSourcesLeaveRoomForAProber) {
  if (!can_open(4096)) GTEST_SKIP() << "needs 4096 open files";
  start(shipped());
  std::vector<tcp::socket> held;
  silent(9, 120, held);
  EXPECT_EQ(attempt(), wire::RejectCode::resources);
  // More of them while the prober's set-up is on its way.
  EXPECT_EQ(attempt("", [&] { silent(9, 30, held); }), wire::RejectCode::resources);
  const int handshakes = on_loop([&] { return responder_->admissions().handshakes(); });
  EXPECT_LE(handshakes, ResponderLimits{}.max_handshakes);
  EXPECT_GT(rejected("handshake_evicted"), 0);
  EXPECT_EQ(rejected("capacity"), 0);
}

// The same with a secret: a set-up signed with it is authenticated (then
// refused for want of a device), one signed with another is refused.
TEST_F(ProbeAdmissionResponderTest, WithASecretTheProberAuthenticatesPastTheFlood) {
  if (!can_open(4096)) GTEST_SKIP() << "needs 4096 open files";
  const std::string secret = "the-shared-probe-secret";
  ResponderSettings rs = shipped();
  rs.keyring = std::make_shared<Keyring>(secret);
  start(rs);
  std::vector<tcp::socket> held;
  silent(9, 120, held);
  EXPECT_EQ(attempt(secret, [&] { silent(9, 30, held); }), wire::RejectCode::resources);
  EXPECT_EQ(attempt("a-wrong-secret-of-length"), wire::RejectCode::auth);
  EXPECT_EQ(rejected("capacity"), 0);
}

// 120 sources keep opening connections, 2 each per round, and never speak;
// the prober's attempt after each round gets through, every time.
TEST_F(ProbeAdmissionResponderTest, ChurningSourcesDoNotCrowdOutAProber) {
  if (!can_open(4096)) GTEST_SKIP() << "needs 4096 open files";
  start(shipped());
  std::deque<tcp::socket> held;
  const auto round = [&] {
    for (int s = 0; s < 120; ++s) {
      const std::string source = "127.0.1." + std::to_string(1 + s);
      for (int i = 0; i < 2; ++i) held.push_back(connect(source));
    }
    // The responder holds few of them: the client may let the oldest go.
    while (held.size() > 1500) held.pop_front();
  };
  int through = 0;
  for (int i = 0; i < 20; ++i) {
    round();
    // Another round while the prober's set-up is on its way.
    if (attempt("", round) == wire::RejectCode::resources) ++through;
  }
  EXPECT_EQ(through, 20);
}

// Discovery (read the hello, leave) takes no session: it works while no
// session may be set up. A set-up past the session caps is refused
// `capacity`.
TEST_F(ProbeAdmissionResponderTest, SessionCapIsTakenAtAuthentication) {
  ResponderSettings rs;
  rs.limits.max_sessions = 0;
  start(rs);
  {
    auto discovery = connect();
    EXPECT_TRUE(is_hello(read_message(discovery)));
  }
  EXPECT_EQ(attempt(), wire::RejectCode::capacity);
  EXPECT_EQ(rejected("capacity"), 1);
}

TEST_F(ProbeAdmissionResponderTest, PerSourceSessionCapIsTakenAtAuthentication) {
  ResponderSettings rs;
  rs.limits.max_sessions_per_source = 0;
  start(rs);
  {
    auto discovery = connect();
    EXPECT_TRUE(is_hello(read_message(discovery)));
  }
  EXPECT_EQ(attempt(), wire::RejectCode::capacity);
  EXPECT_EQ(rejected("capacity"), 1);
}

// No handshake slot at all: refused at once.
TEST_F(ProbeAdmissionResponderTest, NoHandshakeBudgetRefusesAtConnect) {
  ResponderSettings rs;
  rs.limits.max_handshakes = 0;
  start(rs);
  auto s = connect();
  EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::capacity);
  EXPECT_EQ(rejected("capacity"), 1);
}

TEST_F(ProbeAdmissionResponderTest, ASilentClientIsDroppedAfterTheHandshakeDeadline) {
  start({});
  auto s = connect();
  EXPECT_TRUE(is_hello(read_message(s)));
  EXPECT_TRUE(closed_by_peer(s));
  EXPECT_EQ(rejected("handshake_timeout"), 1);
  EXPECT_EQ(on_loop([&] { return responder_->admissions().handshakes(); }), 0);
}

// Many addresses cannot keep a newcomer out: 4,096 sources, each with its
// bucket spent, fill the table, and a source it has never seen still gets
// its hello; one that keeps its bucket spent and stays in the table is
// still refused for rate.
TEST_F(ProbeAdmissionResponderTest, ManySourcesCannotKeepANewcomerOut) {
  if (!can_open(4096)) GTEST_SKIP() << "needs 4096 open files";
  ResponderSettings rs;
  rs.limits.setups_per_minute_per_source = 1;
  start(rs);
  for (std::size_t i = 0; i < limits::kMaxSources; ++i) {
    auto s = connect("127.1." + std::to_string(i / 250) + "." + std::to_string(1 + i % 250));
    read_message(s);
  }
  EXPECT_EQ(on_loop([&] { return responder_->admissions().groups(); }), limits::kMaxSources);
  auto newcomer = connect("127.2.0.1");
  EXPECT_TRUE(is_hello(read_message(newcomer)));
  // The last of the crowd was not forgotten: its bucket is still spent.
  const std::size_t last = limits::kMaxSources - 1;
  auto again =
      connect("127.1." + std::to_string(last / 250) + "." + std::to_string(1 + last % 250));
  EXPECT_EQ(reject_code(read_message(again)), wire::RejectCode::rate);
  EXPECT_EQ(rejected("capacity"), 0);
  EXPECT_LE(on_loop([&] { return responder_->admissions().groups(); }), limits::kMaxSources);
}

// file_sd: one target per address.
TEST(ProbeAdmissionTargets, OneTargetPerAddressTheFirstListed) {
  const std::vector<Target> entries = {
      {"10.0.0.1:10911", {{"rack", "r1"}}, {}, ""},
      {"10.0.0.2:10911", {{"rack", "r1"}}, {}, ""},
      {"10.0.0.1:10911", {{"rack", "r2"}}, {}, ""},  // other labels
      {"10.0.0.1:10911", {{"rack", "r1"}}, {}, ""},  // the same again: merged silently
      {"10.0.0.1:10912", {{"rack", "r1"}}, {}, ""},  // another port, another target
      {"[FE80::1]:10911", {}, {}, ""},               //
      {"[fe80:0::1]:10911", {}, {}, "rail-b"},       // the same address, another rail
      {"Host-A:10911", {}, {}, ""},                  //
      {"host-a:10911", {}, {"rc"}, ""},              // the same host, other classes
      {"10.0.0.2:10911", {{"rack", "r1"}}, {}, ""},  // identical
  };
  const TargetSelection selection = first_per_address(entries);
  EXPECT_EQ(selection.kept, (std::vector<std::size_t>{0, 1, 4, 5, 7}));
  EXPECT_EQ(selection.conflicting,
            (std::vector<std::string>{"10.0.0.1:10911", "Host-A:10911", "[FE80::1]:10911"}));
  EXPECT_EQ(target_key("[FE80:0::1]:10911"), "[fe80::1]:10911");
  EXPECT_EQ(target_key("Host-A:10911"), "host-a:10911");
  EXPECT_EQ(target_key("10.0.0.1:10911"), "10.0.0.1:10911");
}

// 20 file_sd entries for one address with different labels are one target:
// one discovery, with the first entry's labels.
TEST(ProbeAdmissionTargets, FileSdEntriesForOneAddressAreOneTarget) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("probe_admission_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  // A port nothing listens on.
  std::string address;
  {
    boost::asio::io_context io;
    tcp::acceptor a(io, tcp::endpoint(make_address("127.0.0.1"), 0));
    address = "127.0.0.1:" + std::to_string(a.local_endpoint().port());
  }
  const auto path = (dir / "peers.json").string();
  {
    std::ofstream f(path);
    f << "[";
    for (int i = 0; i < 20; ++i) {
      f << (i ? "," : "") << R"({"targets": [")" << address << R"("], "labels": {"rack": "r)" << i
        << R"("}})";
    }
    f << "]";
  }
  ProbeOptions o;
  o.enabled = true;
  o.listen_address = "127.0.0.1:0";
  o.device = "rdma_exporter_test_no_such_device";
  o.file_sd = {path};
  ProbeService service(o);
  ASSERT_TRUE(service.start());
  service.settle();
  MetricSink sink;
  service.collect(sink);
  Snapshot snap;
  snap.families = sink.take();
  EXPECT_EQ(sample(snap, "rdma_probe_targets", {{"source", "file_sd"}}), 1);
  EXPECT_EQ(series_count(snap, "rdma_probe_target_up"), 1u);
  EXPECT_EQ(sample(snap, "rdma_probe_target_up", {{"target", address}, {"rack", "r0"}}), 0);
  service.stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rdma_exporter::probe
