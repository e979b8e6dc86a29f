// The OTLP pusher against an in-process HTTP receiver
// (tests/support/http_receiver.hpp): what it sends, and how it answers
// success, retryable and permanent errors, a hanging receiver and none.
// Tests wait for requests or self metrics, never for a fixed time.

#include "exporter/otlp/pusher.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "common/metric_sink.hpp"
#include "exporter/otlp/options.hpp"
#include "exporter/otlp/tls.hpp"
#include "exporter/process_metrics.hpp"
#include "tests/support/http_receiver.hpp"
#include "tests/support/otlp_request.hpp"
#include "tests/support/protobuf_decoder.hpp"
#include "tests/support/snapshot_query.hpp"
#include "tests/support/wait.hpp"

namespace rdma_exporter {
namespace {

using namespace rdma_exporter::testing;
using std::chrono::milliseconds;
using std::chrono::seconds;

// A fresh collection for every fetch, as the cache gives one.
std::shared_ptr<const Snapshot> fresh_snapshot() {
  auto s = std::make_shared<Snapshot>();
  MetricSink sink;
  sink.counter("rdma_port_hw_rcvd_pkts_total", "Received packets.",
               {{"device", "rxe0"}, {"port", "1"}}, 42);
  s->families = sink.take();
  s->taken = std::chrono::steady_clock::now();
  return s;
}

OtlpOptions fast_options(const HttpReceiver& receiver) {
  OtlpOptions o;
  o.enabled = true;
  o.endpoint = receiver.url();
  o.interval = milliseconds(100);
  o.timeout = milliseconds(2000);
  o.resource_attributes = {{"team", "fabric"}, {"service.name", "rdma-prod"}};
  return o;
}

Snapshot self_metrics(const OtlpPusher& pusher) {
  return rdma_exporter::testing::metrics_of(pusher);
}

double self_metric(const OtlpPusher& p, const std::string& name) {
  return sample(self_metrics(p), name);
}

double exports(const OtlpPusher& p, const std::string& result) {
  return sample(self_metrics(p), "rdma_exporter_otlp_exports_total", {{"result", result}});
}

double unix_seconds_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TEST(OtlpPusher, PushesDecodablePayloadsWithAConstantStartTime) {
  HttpReceiver receiver;
  OtlpPusher pusher(fast_options(receiver), fresh_snapshot);
  // Before start every self metric is there, at zero.
  EXPECT_EQ(exports(pusher, "success"), 0);
  EXPECT_EQ(self_metric(pusher, "rdma_exporter_otlp_last_success_timestamp_seconds"), 0);
  const double before = unix_seconds_now();
  pusher.start();
  ASSERT_TRUE(eventually([&] { return exports(pusher, "success") >= 3; }));
  pusher.stop();
  const double after = unix_seconds_now();

  const auto requests = receiver.requests();
  ASSERT_GE(requests.size(), 3u);
  uint64_t start = 0;
  uint64_t last_time = 0;
  for (const auto& r : requests) {
    EXPECT_EQ(r.target, "/v1/metrics");
    EXPECT_EQ(r.headers.at("Content-Type"), "application/x-protobuf");
    EXPECT_TRUE(r.headers.at("User-Agent").starts_with("rdma_exporter/"));
    const auto d = decode_request(r.body);
    EXPECT_EQ(d.resource.at("service.name"), "rdma-prod");  // user attributes override
    EXPECT_EQ(d.resource.at("team"), "fabric");
    EXPECT_FALSE(d.resource.at("host.name").empty());
    const auto p = pb_one(pb_one(d.metrics.at("rdma.port.hw.rcvd_pkts"), 7, 2).bytes, 1, 2).bytes;
    EXPECT_EQ(pb_one(p, 6, 1).scalar, 42u);
    const uint64_t s = pb_one(p, 2, 1).scalar;
    const uint64_t t = pb_one(p, 3, 1).scalar;
    if (start == 0) start = s;
    EXPECT_EQ(s, start);
    EXPECT_LT(s, t);
    EXPECT_GT(t, last_time);
    last_time = t;
  }
  // Every request was answered 200; the last may have been cut short by stop().
  EXPECT_GE(exports(pusher, "success"), 3);
  EXPECT_LE(exports(pusher, "success"), static_cast<double>(requests.size()));
  EXPECT_EQ(exports(pusher, "network_error"), 0);
  const double last = self_metric(pusher, "rdma_exporter_otlp_last_success_timestamp_seconds");
  EXPECT_GE(last, before);
  EXPECT_LE(last, after);
}

TEST(OtlpPusher, StartTimeIsProcessStartTimeSeconds) {
  // One clock for the process start: the OTLP start time of every
  // cumulative series is process_start_time_seconds, to the nanosecond that
  // a double of seconds since the epoch holds (256 ns).
  HttpReceiver receiver;
  OtlpPusher pusher(fast_options(receiver), fresh_snapshot);
  pusher.start();
  ASSERT_TRUE(eventually([&] { return exports(pusher, "success") >= 1; }));
  pusher.stop();
  const auto d = decode_request(receiver.requests().front().body);
  const auto p = pb_one(pb_one(d.metrics.at("rdma.port.hw.rcvd_pkts"), 7, 2).bytes, 1, 2).bytes;
  const uint64_t start = pb_one(p, 2, 1).scalar;

  ProcessMetrics process;
  MetricSink sink;
  EXPECT_TRUE(process.collect(sink).empty());
  Snapshot s;
  s.families = sink.take();
  EXPECT_NEAR(static_cast<double>(start) / 1e9, sample(s, "process_start_time_seconds"), 512e-9);
}

TEST(OtlpPusher, JsonAndGzipHeaders) {
  HttpReceiver receiver;
  OtlpOptions o = fast_options(receiver);
  o.encoding = OtlpOptions::Encoding::json;
  o.compression = OtlpOptions::Compression::gzip;
  o.headers = {{"X-Scope-OrgID", "tenant1"}};
  OtlpPusher pusher(o, fresh_snapshot);
  pusher.start();
  ASSERT_TRUE(receiver.wait_for_requests(1, seconds(20)));
  pusher.stop();
  const auto r = receiver.requests().front();
  EXPECT_EQ(r.headers.at("Content-Type"), "application/json");
  EXPECT_EQ(r.headers.at("Content-Encoding"), "gzip");
  EXPECT_EQ(r.headers.at("X-Scope-OrgID"), "tenant1");
  ASSERT_GE(r.body.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(r.body[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(r.body[1]), 0x8b);
}

TEST(OtlpPusher, RetriesAfterRetryAfterThenSucceeds) {
  HttpReceiver receiver;
  receiver.script({{503, "1", false}, {429, "", false}}, {});
  OtlpOptions o = fast_options(receiver);
  o.interval = seconds(30);  // one payload: every request is a retry of it
  OtlpPusher pusher(o, fresh_snapshot);
  pusher.start();
  ASSERT_TRUE(receiver.wait_for_requests(3, seconds(20)));
  ASSERT_TRUE(eventually([&] { return exports(pusher, "success") >= 1; }));
  pusher.stop();
  const auto r = receiver.requests();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].body, r[1].body);  // the same payload again
  EXPECT_EQ(r[1].body, r[2].body);
  // Retry-After: 1 is honoured; after the 429 the backoff is 1-2 s with
  // jitter. Lower bounds only: a slow machine only makes the gaps longer.
  EXPECT_GE(r[1].at - r[0].at, milliseconds(950));
  EXPECT_GE(r[2].at - r[1].at, milliseconds(450));
  EXPECT_EQ(exports(pusher, "retryable_error"), 2);
  EXPECT_EQ(exports(pusher, "success"), 1);
  EXPECT_EQ(self_metric(pusher, "rdma_exporter_otlp_queue_length"), 0);
}

TEST(OtlpPusher, RetryAfterIsCappedByMaxBackoff) {
  HttpReceiver receiver;
  receiver.script({{503, "3600", false}}, {});
  OtlpOptions o = fast_options(receiver);
  o.interval = seconds(30);
  o.max_backoff = milliseconds(300);
  OtlpPusher pusher(o, fresh_snapshot);
  pusher.start();
  // Far sooner than the hour asked for.
  ASSERT_TRUE(receiver.wait_for_requests(2, seconds(20)));
  pusher.stop();
}

TEST(OtlpPusher, RetryAfterZeroStillBacksOff) {
  HttpReceiver receiver;
  receiver.script({{503, "0", false}}, {});
  OtlpOptions o = fast_options(receiver);
  o.interval = seconds(30);
  OtlpPusher pusher(o, fresh_snapshot);
  pusher.start();
  ASSERT_TRUE(receiver.wait_for_requests(2, seconds(20)));
  pusher.stop();
  const auto r = receiver.requests();
  EXPECT_GE(r[1].at - r[0].at, milliseconds(450));
}

TEST(OtlpPusher, PermanentErrorsDropThePayloadWithoutRetrying) {
  HttpReceiver receiver;
  receiver.script({}, {400, "", false});
  // Four collections, then the fourth again and again: nothing more to send.
  std::shared_ptr<const Snapshot> last;
  int fetches = 0;  // the pusher's thread only
  OtlpPusher pusher(fast_options(receiver), [&] {
    if (++fetches <= 4) last = fresh_snapshot();
    return last;
  });
  pusher.start();
  ASSERT_TRUE(eventually([&] { return exports(pusher, "permanent_error") >= 4; }));
  // Each payload was sent once and dropped: four requests, four payloads.
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 4u);
  std::set<std::string> bodies;
  for (const auto& r : requests) bodies.insert(r.body);
  EXPECT_EQ(bodies.size(), 4u);
  EXPECT_EQ(self_metric(pusher, "rdma_exporter_otlp_queue_length"), 0);
  pusher.stop();
  EXPECT_EQ(receiver.requests().size(), 4u);
  EXPECT_EQ(exports(pusher, "permanent_error"), 4);
  EXPECT_EQ(exports(pusher, "retryable_error"), 0);
}

TEST(OtlpPusher, HangingReceiverBoundsTheQueueAndStopIsPrompt) {
  HttpReceiver receiver;
  receiver.script({}, {0, "", true});
  OtlpOptions o = fast_options(receiver);
  o.interval = milliseconds(50);
  o.timeout = milliseconds(300);
  o.max_backoff = milliseconds(100);
  o.queue_size = 2;
  OtlpPusher pusher(o, fresh_snapshot);
  pusher.start();
  ASSERT_TRUE(eventually([&] {
    return exports(pusher, "network_error") >= 2 &&
           self_metric(pusher, "rdma_exporter_otlp_dropped_total") >= 1;
  }));
  EXPECT_LE(self_metric(pusher, "rdma_exporter_otlp_queue_length"), 2);
  pusher.stop();
  EXPECT_LE(self_metric(pusher, "rdma_exporter_otlp_queue_length"), 2);

  // A request in flight with a long timeout does not hold up stop(): it
  // returns long before the minute the request could still take.
  HttpReceiver slow;
  slow.script({}, {0, "", true});
  OtlpOptions so = fast_options(slow);
  so.timeout = seconds(60);
  OtlpPusher stuck(so, fresh_snapshot);
  stuck.start();
  ASSERT_TRUE(slow.wait_for_requests(1, seconds(20)));
  auto stopped = std::async(std::launch::async, [&] { stuck.stop(); });
  EXPECT_EQ(stopped.wait_for(seconds(20)), std::future_status::ready);
}

TEST(OtlpPusher, AbsentReceiverCountsNetworkErrors) {
  // A port nobody listens on: bind one, note it, close it.
  unsigned short port = 0;
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port = a.local_endpoint().port();
  }
  OtlpOptions o;
  o.endpoint = "http://127.0.0.1:" + std::to_string(port) + "/v1/metrics";
  o.interval = milliseconds(100);
  o.max_backoff = milliseconds(100);
  OtlpPusher pusher(o, fresh_snapshot);
  pusher.start();
  ASSERT_TRUE(eventually([&] { return exports(pusher, "network_error") >= 2; }));
  pusher.stop();
  EXPECT_EQ(exports(pusher, "success"), 0);
}

// https:// to a receiver that speaks plain HTTP (it answers the ClientHello
// with an HTTP error, as a plain HTTP server does): the TLS layer refuses
// the answer, a tls_error (not a network error).
TEST(OtlpHttpClient, HttpsToAPlainHttpReceiverIsATlsError) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor plain(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  std::thread server([&plain] {
    boost::system::error_code ec;
    boost::asio::ip::tcp::socket s = plain.accept(ec);
    if (ec) return;
    char hello[512];
    s.read_some(boost::asio::buffer(hello), ec);  // the ClientHello
    const std::string answer = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    boost::asio::write(s, boost::asio::buffer(answer), ec);
    s.shutdown(boost::asio::ip::tcp::socket::shutdown_send, ec);
    s.read_some(boost::asio::buffer(hello), ec);  // until the client closes
  });
  OtlpEndpoint endpoint;
  ASSERT_EQ(
      parse_otlp_endpoint(
          "https://127.0.0.1:" + std::to_string(plain.local_endpoint().port()) + "/", endpoint),
      "");
  auto tls = make_otlp_tls_context(OtlpOptions{});
  ASSERT_TRUE(tls) << tls.error().message;
  OtlpHttpClient client(endpoint, *tls);
  const OtlpHttpResult r = client.post("payload", {}, seconds(5));
  server.join();
  EXPECT_EQ(r.kind, OtlpHttpResult::Kind::tls_error) << r.error;
  EXPECT_TRUE(r.error.starts_with("TLS handshake: ")) << r.error;
}

// A receiver that takes the connection but never answers the handshake: a
// network error after the timeout, like any other silence.
TEST(OtlpHttpClient, SilentTlsHandshakeIsANetworkErrorAfterTheTimeout) {
  boost::asio::io_context io;
  // Listening, never accepting: the kernel completes the TCP handshake.
  boost::asio::ip::tcp::acceptor silent(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  OtlpEndpoint endpoint;
  ASSERT_EQ(
      parse_otlp_endpoint(
          "https://127.0.0.1:" + std::to_string(silent.local_endpoint().port()) + "/", endpoint),
      "");
  auto tls = make_otlp_tls_context(OtlpOptions{});
  ASSERT_TRUE(tls) << tls.error().message;
  OtlpHttpClient client(endpoint, *tls);
  const OtlpHttpResult r = client.post("payload", {}, milliseconds(300));
  EXPECT_EQ(r.kind, OtlpHttpResult::Kind::network_error) << r.error;
  EXPECT_EQ(r.error, "TLS handshake: The socket was closed due to a timeout");
}

TEST(OtlpPusher, NothingToSendWithoutASnapshot) {
  HttpReceiver receiver;
  std::atomic<int> fetches{0};
  auto same = fresh_snapshot();
  OtlpPusher pusher(fast_options(receiver), [&]() -> std::shared_ptr<const Snapshot> {
    const int n = ++fetches;
    if (n == 1) return nullptr;
    if (n == 2) return std::make_shared<Snapshot>();  // no families
    return same;  // the same collection again and again: sent once
  });
  pusher.start();
  ASSERT_TRUE(eventually([&] { return fetches >= 6; }));
  ASSERT_TRUE(receiver.wait_for_requests(1, seconds(20)));
  ASSERT_TRUE(eventually([&] { return exports(pusher, "success") >= 1; }));
  pusher.stop();
  EXPECT_EQ(receiver.requests().size(), 1u);
  EXPECT_EQ(exports(pusher, "success"), 1);
}

}  // namespace
}  // namespace rdma_exporter
