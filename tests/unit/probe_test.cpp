// The probe's parts that need no RDMA device: file_sd targets, metrics, and
// the responder's defences (it refuses before it allocates anything).

#include "collectors/probe/probe.hpp"

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>
#include <filesystem>
#include <future>
#include <limits>
#include <thread>

#include "collectors/probe/auth.hpp"
#include "collectors/probe/health.hpp"
#include "collectors/probe/responder.hpp"
#include "collectors/probe/targets.hpp"
#include "collectors/probe/verbs_device.hpp"
#include "common/yaml_walker.hpp"
#include "snapshot_query.hpp"

namespace rdma_exporter::probe {
namespace {

using boost::asio::ip::tcp;
using rdma_exporter::testing::sample;
using rdma_exporter::testing::series_count;

Snapshot metrics_of(const ProbeStats& stats) {
  MetricSink sink;
  stats.add_metrics(sink);
  Snapshot s;
  s.families = sink.take();
  return s;
}

TEST(ProbeTargets, FileSdGroupsBecomeTargetsWithLabels) {
  const std::string json = R"([
    {"targets": ["10.0.0.1:10911", "[fe80::1]:10911"], "labels": {"rack": "r1", "__meta_x": "y"}},
    {"targets": ["host-b:10911"]}
  ])";
  auto t = parse_file_sd(json, "peers.json");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->size(), 3u);
  EXPECT_EQ((*t)[0].address, "10.0.0.1:10911");
  EXPECT_EQ((*t)[0].labels, (std::map<std::string, std::string>{{"rack", "r1"}}));
  EXPECT_EQ((*t)[1].address, "[fe80::1]:10911");
  EXPECT_TRUE((*t)[2].labels.empty());
  // YAML works too, and an empty file means no targets.
  auto y = parse_file_sd("- targets: [a:1]\n  labels: {zone: z}\n", "peers.yml");
  ASSERT_TRUE(y);
  EXPECT_EQ(y->at(0).labels.at("zone"), "z");
  EXPECT_TRUE(parse_file_sd("", "empty.yml")->empty());
}

TEST(ProbeTargets, BadFileSdNamesTheFileAndPlace) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{targets: [a:1]}", "expected a list"},
      {"- targets: a:1", "expected a list"},
      {"- targets: [nohostport]", "host:port"},
      {"- targets: [a:0]", "host:port"},
      {"- targets: [':1']", "host:port"},
      {"- targets: [a:1]\n  labels: {target: x}", "set by the probe"},
      {"- targets: [a:1]\n  labels: {'bad-name': x}", "not a valid label name"},
      {"- targets: [a:1]\n  labels: {ok: [1]}", "expected a string"},
      {"- targets: [a:1]\n  extra: 1", "unknown key"},
      {"[", "peers.yml:"},
      {"- 5", "expected a mapping"},
  };
  for (const auto& [text, want] : bad) {
    auto r = parse_file_sd(text, "peers.yml");
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.error().message.find(want), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.rfind("peers.yml", 0), 0u) << r.error().message;
  }
}

TEST(ProbeOptionsCheck, ProblemsAreNamed) {
  ProbeOptions o;
  ProbeClass a;
  a.name = "lat";
  ProbeClass b = a;  // same name, same op/size/tclass
  b.mtu = 1000;
  b.size = 1 << 21;
  o.classes = {a, b};
  o.targets = {Target{"nohost", {}, {"missing"}}};
  o.backoff_max = std::chrono::milliseconds(1);
  const auto errors = validate_probe_options(o);
  const auto has = [&](const std::string& s) {
    return std::any_of(errors.begin(), errors.end(),
                       [&](const std::string& e) { return e.find(s) != std::string::npos; });
  };
  EXPECT_TRUE(has("probe.classes[1].name: \"lat\" is used twice"));
  EXPECT_TRUE(has("probe.classes[1].mtu"));
  EXPECT_TRUE(has("probe.classes[1].size: above probe.max_message_size"));
  EXPECT_TRUE(has("probe.targets[0].address"));
  EXPECT_TRUE(has("no class named \"missing\""));
  EXPECT_TRUE(has("probe.backoff_max"));
  EXPECT_TRUE(validate_probe_options(ProbeOptions{}).empty());
  EXPECT_EQ(effective_classes(ProbeOptions{}).size(), 1u);
}

// The probe's section is read by the probe, with the daemon's walker; its
// messages name the file, line, column and key.
TEST(ProbeOptionsParse, SectionIsReadAndProblemsAreWordedExactly) {
  const YAML::Node root = YAML::Load(
      "probe:\n"
      "  port: 2\n"
      "  classes:\n"
      "    - {name: a, op: atomic, sl: 16, busy_poll: 20us}\n"
      "  memory: gpu\n");
  Walker w("p.yml");
  ProbeOptions o;
  parse_probe_options(w, root["probe"], "probe", o);
  EXPECT_EQ(w.take(),
            (std::vector<std::string>{
                "p.yml:4:21: probe.classes[0].op: expected one of send, write, read, got "
                "\"atomic\"",
                "p.yml:4:33: probe.classes[0].sl: expected an integer from 0 to 15, got \"16\"",
                "p.yml:5:11: probe.memory: expected one of host, udmabuf, got \"gpu\"",
            }));
  EXPECT_EQ(o.port, 2);
  ASSERT_EQ(o.classes.size(), 1u);
  EXPECT_EQ(o.classes[0].name, "a");
  EXPECT_EQ(o.classes[0].busy_poll, std::chrono::microseconds(20));
  EXPECT_EQ(o.memory, "host");
}

TEST(ProbeStatsTest, SeriesCarryTargetClassAndTargetLabels) {
  ProbeStats stats;
  ProbeClass c;
  c.op = Op::send;
  c.size = 4096;
  c.tclass = 106;
  auto s = stats.series(series_labels("10.0.0.2:10911", c, {{"rack", "r7"}}));
  s->sent();
  s->sent();
  s->success(12e-6, 1700000000.0);
  s->timeout();
  s->error(reason::refused);
  const Labels want = {{"target", "10.0.0.2:10911"},
                       {"op", "send"},
                       {"size", "4096"},
                       {"tclass", "106"},
                       {"rack", "r7"}};
  const Snapshot snap = metrics_of(stats);
  EXPECT_EQ(sample(snap, "rdma_probe_sent_total", want), 2);
  EXPECT_EQ(sample(snap, "rdma_probe_timeouts_total", want), 1);
  Labels refused = want;
  refused.emplace_back("reason", "refused");
  EXPECT_EQ(sample(snap, "rdma_probe_errors_total", refused), 1);
  EXPECT_EQ(sample(snap, "rdma_probe_up", want), 0);
  EXPECT_EQ(sample(snap, "rdma_probe_last_success_timestamp_seconds", want), 1700000000.0);
  // The histogram: 12 us lands in the 25 us bucket and above.
  bool found = false;
  for (const auto& f : snap.families) {
    if (f.name != "rdma_probe_latency_seconds") continue;
    ASSERT_EQ(f.type, prometheus::MetricType::Histogram);
    ASSERT_EQ(f.metric.size(), 1u);
    const auto& h = f.metric[0].histogram;
    EXPECT_EQ(h.sample_count, 1u);
    EXPECT_DOUBLE_EQ(h.sample_sum, 12e-6);
    // le: 1us 2.5us 5us 10us | 25us ... 1s, +Inf
    std::vector<uint64_t> counts;
    for (const auto& b : h.bucket) counts.push_back(b.cumulative_count);
    EXPECT_EQ(counts,
              (std::vector<uint64_t>{0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}));
    found = true;
  }
  EXPECT_TRUE(found);
  // A target dropped from the configuration stops being exported.
  stats.retain({});
  EXPECT_EQ(series_count(metrics_of(stats), "rdma_probe_sent_total"), 0u);
}

TEST(ProbeVerbs, DeviceClockTicksBecomeSeconds) {
  // mlx5's hca_core_clock is in kHz: 1,000,000 kHz is a 1 GHz clock.
  EXPECT_DOUBLE_EQ(ticks_to_seconds(1000, 1000000), 1e-6);
  EXPECT_DOUBLE_EQ(ticks_to_seconds(156250, 156250), 1e-3);
  EXPECT_EQ(ticks_to_seconds(1000, 0), 0);  // no clock, no number
}

TEST(ProbeVerbs, MtuBytesAndEnumsRoundTrip) {
  for (uint32_t bytes : {256u, 512u, 1024u, 2048u, 4096u}) {
    EXPECT_EQ(mtu_bytes(mtu_enum(bytes)), bytes);
  }
  EXPECT_EQ(mtu_enum(4096), IBV_MTU_4096);
}

TEST(ProbeStatsTest, BucketsSpanOneMicrosecondToOneSecond) {
  // 1, 2.5 and 5 per decade, 1 us to 1 s: 19 buckets.
  EXPECT_EQ(latency_buckets(),
            (std::vector<double>{1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3,
                                 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1.0}));
}

TEST(ProbeStatsTest, LatenciesLandInTheirBuckets) {
  ProbeStats stats;
  auto s = stats.series({{"target", "t"}});
  s->success(2.5e-5, 1);  // on a bound: counted in it (le is inclusive)
  s->success(2.6e-5, 1);  // just above: the 50 us bucket
  s->success(0.003, 1);   // 3 ms: the 5 ms bucket
  s->success(2.0, 1);     // above 1 s: +Inf only
  const Snapshot snap = metrics_of(stats);
  std::vector<std::pair<double, uint64_t>> got;
  for (const auto& f : snap.families) {
    if (f.name != "rdma_probe_latency_seconds") continue;
    for (const auto& b : f.metric.at(0).histogram.bucket) {
      got.emplace_back(b.upper_bound, b.cumulative_count);
    }
  }
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(got, (std::vector<std::pair<double, uint64_t>>{
                     {1e-6, 0},   {2.5e-6, 0}, {5e-6, 0},   {1e-5, 0},   {2.5e-5, 1},
                     {5e-5, 2},   {1e-4, 2},   {2.5e-4, 2}, {5e-4, 2},   {1e-3, 2},
                     {2.5e-3, 2}, {5e-3, 3},   {1e-2, 3},   {2.5e-2, 3}, {5e-2, 3},
                     {0.1, 3},    {0.25, 3},   {0.5, 3},    {1.0, 3},    {inf, 4}}));
}

TEST(ProbeHealthTest, ProblemsInAFixedOrderUntilCleared) {
  ProbeHealth h;
  EXPECT_EQ(h.problems(), std::vector<std::string>{"the probe responder is not listening"});
  h.set_listening(true);
  EXPECT_TRUE(h.problems().empty());
  h.set_file_sd_problem("/b.json", "file_sd /b.json: Permission denied");
  h.set_file_sd_problem("/a.json", "file_sd /a.json: No such file or directory");
  h.set_memory_problem("probe.memory udmabuf cannot be used on mlx5_0: no udmabuf");
  h.set_device_problem("no RDMA device named mlx5_9");
  h.set_loop_failed("bad_alloc");
  EXPECT_EQ(h.problems(), (std::vector<std::string>{
                              "the probe's event loop stopped: bad_alloc",
                              "no RDMA device named mlx5_9",
                              "probe.memory udmabuf cannot be used on mlx5_0: no udmabuf",
                              "file_sd /a.json: No such file or directory",
                              "file_sd /b.json: Permission denied",
                          }));
  h.set_file_sd_problem("/a.json", "");
  h.set_device_problem("");
  h.set_memory_problem("");
  EXPECT_EQ(h.problems(), (std::vector<std::string>{"the probe's event loop stopped: bad_alloc",
                                                    "file_sd /b.json: Permission denied"}));
  h.forget_file_sd();
  h.set_listening(false);
  EXPECT_EQ(h.problems(), (std::vector<std::string>{"the probe's event loop stopped: bad_alloc",
                                                    "the probe responder is not listening"}));
}

void write_text(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr) << path;
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

// The service as the daemon's collector sees it: its metrics, and what is
// wrong with the probe itself. This host may have no RDMA at all.
TEST(ProbeServiceTest, CollectReturnsTheProbesOwnProblems) {
  const std::string dir = ::testing::TempDir() + "/probe_service_collect";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  write_text(dir + "/bad.yml", "targets: [a:1]\n");
  ProbeOptions o;
  o.enabled = true;
  o.device = "rdma_exporter_test_no_such_device";
  o.listen_address = "127.0.0.1:0";
  o.file_sd = {dir + "/bad.yml", dir + "/missing.yml"};
  // Targets that do not answer are not a problem of the probe.
  o.targets = {Target{"127.0.0.1:1", {}, {}}};
  o.loopback = true;
  ProbeService service(o);
  MetricSink before;
  EXPECT_EQ(service.collect(before),
            std::vector<std::string>{"the probe responder is not listening"});

  ASSERT_TRUE(service.start());
  service.settle();
  MetricSink sink;
  auto problems = service.collect(sink);
  ASSERT_EQ(problems.size(), 3u) << ::testing::PrintToString(problems);
  // Without the verbs kernel interface, listing fails; with it, the name is
  // not found.
  EXPECT_TRUE(problems[0] == "listing RDMA devices: Function not implemented" ||
              problems[0] == "no RDMA device named rdma_exporter_test_no_such_device")
      << problems[0];
  EXPECT_EQ(problems[1], "file_sd: " + dir + "/bad.yml:1:1: expected a list of target groups");
  EXPECT_EQ(problems[2], "file_sd " + dir + "/missing.yml: No such file or directory");
  Snapshot snap;
  snap.families = sink.take();
  EXPECT_EQ(sample(snap, "rdma_probe_file_sd_last_read_successful"), 0);
  EXPECT_EQ(sample(snap, "rdma_probe_targets", {{"source", "static"}}), 1);

  // Both files readable now: only the device is left.
  write_text(dir + "/bad.yml", "- targets: [a:1, b:2]\n");
  write_text(dir + "/missing.yml", "[]\n");
  service.update(o);
  service.settle();
  MetricSink after;
  problems = service.collect(after);
  ASSERT_EQ(problems.size(), 1u) << ::testing::PrintToString(problems);
  snap.families = after.take();
  EXPECT_EQ(sample(snap, "rdma_probe_targets", {{"source", "file_sd"}}), 2);

  // A list of files without the failing one forgets its problem.
  write_text(dir + "/bad.yml", "oops: [\n");
  service.update(o);
  service.settle();
  MetricSink broken;
  problems = service.collect(broken);
  ASSERT_EQ(problems.size(), 2u) << ::testing::PrintToString(problems);
  EXPECT_EQ(problems[1].rfind("file_sd: " + dir + "/bad.yml:", 0), 0u) << problems[1];
  o.file_sd = {dir + "/missing.yml"};
  service.update(o);
  service.settle();
  MetricSink fixed;
  EXPECT_EQ(service.collect(fixed).size(), 1u);

  service.stop();
  MetricSink stopped;
  problems = service.collect(stopped);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0], "the probe responder is not listening");
}

// A responder without an RDMA device on a loopback port, and blocking
// clients that talk to it.
class ResponderTest : public ::testing::Test {
 protected:
  void start(ResponderSettings settings) {
    settings.listen_address = "127.0.0.1:0";
    responder_ = std::make_unique<Responder>(io_, settings, stats_);
    ASSERT_TRUE(responder_->start());
    port_ = responder_->port();
    thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    if (responder_) {
      boost::asio::post(io_, [this] { responder_->stop(); });
    }
    work_.reset();
    if (thread_.joinable()) thread_.join();
  }

  tcp::socket connect() {
    tcp::socket s(client_io_);
    s.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port_));
    return s;
  }

  // Reads one message; nullopt at EOF or error.
  static std::optional<wire::Message> read_message(tcp::socket& s) {
    std::array<uint8_t, wire::kHeaderSize> header{};
    boost::system::error_code ec;
    boost::asio::read(s, boost::asio::buffer(header), ec);
    if (ec) return std::nullopt;
    auto h = wire::decode_header(header);
    if (!h) return std::nullopt;
    std::vector<uint8_t> payload(h->length);
    boost::asio::read(s, boost::asio::buffer(payload), ec);
    if (ec) return std::nullopt;
    auto m = wire::decode_payload(h->type, payload);
    if (!m) return std::nullopt;
    return m.value();
  }

  static bool closed_by_peer(tcp::socket& s) {
    std::array<uint8_t, 1> b{};
    boost::system::error_code ec;
    boost::asio::read(s, boost::asio::buffer(b), ec);
    return ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset;
  }

  static wire::RejectCode reject_code(const std::optional<wire::Message>& m) {
    EXPECT_TRUE(m && std::holds_alternative<wire::Reject>(*m));
    return m && std::holds_alternative<wire::Reject>(*m) ? std::get<wire::Reject>(*m).code
                                                         : wire::RejectCode::protocol;
  }

  static wire::Setup valid_setup() {
    wire::Setup s;
    s.op = Op::write;
    s.size = 64;
    s.peer.qpn = 17;
    return s;
  }

  // Waits (bounded) until the responder's session count is `n`.
  void wait_sessions(int n) {
    for (int i = 0; i < 500; ++i) {
      if (sample(metrics_of(*stats_), "rdma_probe_responder_sessions") == n) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "sessions never reached " << n;
  }

  double rejected(const std::string& why) {
    const double v =
        sample(metrics_of(*stats_), "rdma_probe_responder_rejected_total", {{"reason", why}});
    return std::isnan(v) ? 0 : v;
  }

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{
      io_.get_executor()};
  boost::asio::io_context client_io_;
  std::shared_ptr<ProbeStats> stats_ = std::make_shared<ProbeStats>();
  std::unique_ptr<Responder> responder_;
  unsigned short port_ = 0;
  std::thread thread_;
};

TEST_F(ResponderTest, GarbageClientIsRefusedAndCounted) {
  start({});
  auto s = connect();
  auto hello = read_message(s);
  ASSERT_TRUE(hello && std::holds_alternative<wire::Hello>(*hello));
  EXPECT_FALSE(std::get<wire::Hello>(*hello).auth_required);
  boost::asio::write(s, boost::asio::buffer(std::string("GET / HTTP/1.1\r\nHost: x\r\n\r\n")));
  EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::protocol);
  EXPECT_TRUE(closed_by_peer(s));
  wait_sessions(0);
  EXPECT_EQ(rejected("protocol"), 1);
}

TEST_F(ResponderTest, OtherProtocolVersionIsToldSo) {
  start({});
  auto s = connect();
  read_message(s);
  const std::vector<uint8_t> v2 = {'R', 'X', 'P', 2, 2, 0, 0, 0};
  boost::asio::write(s, boost::asio::buffer(v2));
  EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::version);
  EXPECT_EQ(rejected("version"), 1);
}

TEST_F(ResponderTest, MessagesOutOfOrderAreRefused) {
  start({});
  auto s = connect();
  read_message(s);
  boost::asio::write(s, boost::asio::buffer(wire::encode(wire::Keepalive{})));
  EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::protocol);
}

TEST_F(ResponderTest, SetupWithoutDeviceIsRefusedWithResources) {
  start({});
  auto s = connect();
  read_message(s);
  boost::asio::write(s, boost::asio::buffer(wire::encode(valid_setup())));
  EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::resources);
  EXPECT_EQ(rejected("resources"), 1);
}

TEST_F(ResponderTest, OversizedMessagesAreNotOffered) {
  ResponderSettings rs;
  rs.max_message_size = 4096;
  start(rs);
  auto s = connect();
  read_message(s);
  wire::Setup big = valid_setup();
  big.size = 1 << 30;
  boost::asio::write(s, boost::asio::buffer(wire::encode(big)));
  EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::unsupported);
}

TEST_F(ResponderTest, WrongSecretIsRefusedRightOneGetsThrough) {
  ResponderSettings rs;
  rs.secret = "the-shared-probe-secret";
  start(rs);
  {
    auto s = connect();
    auto hello = read_message(s);
    ASSERT_TRUE(hello && std::get<wire::Hello>(*hello).auth_required);
    wire::Setup setup = valid_setup();
    setup.mac = setup_mac("a-wrong-secret-of-length", std::get<wire::Hello>(*hello).nonce, setup);
    boost::asio::write(s, boost::asio::buffer(wire::encode(setup)));
    EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::auth);
  }
  {
    // No MAC at all.
    auto s = connect();
    read_message(s);
    boost::asio::write(s, boost::asio::buffer(wire::encode(valid_setup())));
    EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::auth);
  }
  {
    // A MAC for another nonce (a replayed set-up).
    auto s = connect();
    read_message(s);
    wire::Setup setup = valid_setup();
    setup.mac = setup_mac(rs.secret, random_nonce(), setup);
    boost::asio::write(s, boost::asio::buffer(wire::encode(setup)));
    EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::auth);
  }
  EXPECT_EQ(rejected("auth"), 3);
  auto s = connect();
  auto hello = read_message(s);
  wire::Setup setup = valid_setup();
  setup.mac = setup_mac(rs.secret, std::get<wire::Hello>(*hello).nonce, setup);
  boost::asio::write(s, boost::asio::buffer(wire::encode(setup)));
  // Authenticated: refused only for want of a device here.
  EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::resources);
}

TEST_F(ResponderTest, SessionCapAndPerSourceCap) {
  ResponderSettings rs;
  rs.max_sessions = 2;
  start(rs);
  auto a = connect();
  auto b = connect();
  read_message(a);
  read_message(b);
  wait_sessions(2);
  auto c = connect();
  EXPECT_EQ(reject_code(read_message(c)), wire::RejectCode::capacity);
  EXPECT_TRUE(closed_by_peer(c));
  a.close();
  b.close();
  wait_sessions(0);
  auto d = connect();
  auto hello = read_message(d);
  EXPECT_TRUE(hello && std::holds_alternative<wire::Hello>(*hello));
  EXPECT_EQ(rejected("capacity"), 1);
}

TEST_F(ResponderTest, SetupRateIsLimitedPerSource) {
  ResponderSettings rs;
  rs.setups_per_minute_per_source = 3;
  start(rs);
  for (int i = 0; i < 3; ++i) {
    auto s = connect();
    auto hello = read_message(s);
    EXPECT_TRUE(hello && std::holds_alternative<wire::Hello>(*hello)) << i;
  }
  auto s = connect();
  EXPECT_EQ(reject_code(read_message(s)), wire::RejectCode::rate);
  EXPECT_EQ(rejected("rate"), 1);
}

TEST_F(ResponderTest, SilentClientIsDroppedAfterTheHandshakeTimeout) {
  ResponderSettings rs;
  rs.handshake_timeout = std::chrono::milliseconds(100);
  start(rs);
  auto s = connect();
  read_message(s);
  EXPECT_TRUE(closed_by_peer(s));
  wait_sessions(0);
  EXPECT_EQ(rejected("handshake_timeout"), 1);
}

TEST_F(ResponderTest, ThousandsOfConnectionsLeaveNothingBehind) {
  ResponderSettings rs;
  rs.setups_per_minute_per_source = 1000000;
  start(rs);
  for (int i = 0; i < 2000; ++i) {
    auto s = connect();
    if (i % 2 == 0) {
      read_message(s);
      boost::asio::write(s, boost::asio::buffer(wire::encode(valid_setup())));
      read_message(s);
    }
  }
  // Connections are admitted in order: once this one is answered, every
  // earlier one has been admitted.
  auto last = connect();
  read_message(last);
  last.close();
  wait_sessions(0);
  std::promise<std::size_t> held;
  boost::asio::post(io_, [&] { held.set_value(responder_->sessions()); });
  EXPECT_EQ(held.get_future().get(), 0u);
  EXPECT_EQ(rejected("resources"), 1000);
}

}  // namespace
}  // namespace rdma_exporter::probe
