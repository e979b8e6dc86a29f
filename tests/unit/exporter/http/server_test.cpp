// The HTTP server on 127.0.0.1, driven by a plain socket client, in front of a
// snapshot cache whose collections are a stand-in. Every expected response
// is written out byte for byte.

#include "exporter/http/server.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/password_gate.hpp"
#include "tests/support/wait.hpp"
#include "tests/unit/exporter/http/server_harness.hpp"

namespace rdma_exporter {
namespace {

using testing::Client;
using testing::get_once;
using testing::request;
using testing::Server;

using namespace std::chrono_literals;

// Made by `htpasswd -nbBC 5 prom 'secret pass'`.
constexpr const char* kHash = "$2y$05$KlUMDg8/hTYzyUHGYH5etOm6STmU58gR.jglXJ8vLx18GQ3bbGZBa";

constexpr const char* kHealthz =
    "HTTP/1.1 200 OK\r\nServer: rdma_exporter\r\nContent-Type: text/plain; charset=utf-8\r\n"
    "Content-Length: 3\r\n\r\nOK\n";

TEST(HttpServer, ServesHealthz) {
  Server server({});
  EXPECT_EQ(get_once(server.port(), request("GET", "/healthz")), kHealthz);
  EXPECT_EQ(get_once(server.port(), request("GET", "/healthz?verbose=1")), kHealthz);
}

TEST(HttpServer, ServesTheLandingPage) {
  Server server({});
  const std::string res = get_once(server.port(), request("GET", "/"));
  EXPECT_EQ(res.rfind("HTTP/1.1 200 OK\r\nServer: rdma_exporter\r\n"
                      "Content-Type: text/html; charset=utf-8\r\nContent-Length: 246\r\n\r\n"
                      "<!DOCTYPE html>\n",
                      0),
            0u)
      << res;
}

TEST(HttpServer, ServesTheSnapshotPlainOrGzip) {
  Server server({});
  Client c(server.port());
  c.send(request("GET", "/metrics"));
  EXPECT_EQ(c.response(),
            "HTTP/1.1 200 OK\r\nServer: rdma_exporter\r\n"
            "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\nVary: Accept-Encoding\r\n"
            "Content-Length: 10\r\n\r\nrdma_up 1\n");
  c.send(request("GET", "/metrics", "Accept-Encoding: deflate, gzip\r\n"));
  EXPECT_EQ(c.response(),
            "HTTP/1.1 200 OK\r\nServer: rdma_exporter\r\n"
            "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\nVary: Accept-Encoding\r\n"
            "Content-Encoding: gzip\r\nContent-Length: 6\r\n\r\n<gzip>");
}

TEST(HttpServer, RefusedGzipGetsPlainText) {
  Server server({});
  const std::string res =
      get_once(server.port(), request("GET", "/metrics", "Accept-Encoding: gzip;q=0\r\n"));
  EXPECT_EQ(res.substr(res.size() - 14), "\r\n\r\nrdma_up 1\n") << res;
  EXPECT_EQ(res.find("Content-Encoding"), std::string::npos) << res;
}

TEST(HttpServer, UnknownPathIs404AndOtherMethods405) {
  Server server({});
  EXPECT_EQ(get_once(server.port(), request("GET", "/nope")),
            "HTTP/1.1 404 Not Found\r\nServer: rdma_exporter\r\n"
            "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 10\r\n\r\nnot found\n");
  EXPECT_EQ(get_once(server.port(), request("GET", "/metrics/")).substr(0, 22),
            "HTTP/1.1 404 Not Found");
  for (const char* path : {"/metrics", "/", "/healthz"}) {
    for (const char* method : {"POST", "PUT", "DELETE", "OPTIONS"}) {
      EXPECT_EQ(get_once(server.port(), request(method, path)),
                "HTTP/1.1 405 Method Not Allowed\r\nServer: rdma_exporter\r\n"
                "Content-Type: text/plain; charset=utf-8\r\nAllow: GET, HEAD\r\n"
                "Content-Length: 19\r\n\r\nmethod not allowed\n")
          << method << " " << path;
    }
  }
  const std::string stats = server.stats();
  EXPECT_NE(stats.find("rdma_exporter_http_requests_total{handler=\"other\",code=\"404\"} 2\n"),
            std::string::npos)
      << stats;
  EXPECT_NE(stats.find("rdma_exporter_http_requests_total{handler=\"/metrics\",code=\"405\"} 4\n"),
            std::string::npos)
      << stats;
}

TEST(HttpServer, HeadHasTheHeadersOfGetAndNoBody) {
  Server server({});
  Client c(server.port());
  c.send(request("HEAD", "/metrics"));
  EXPECT_EQ(c.response(true),
            "HTTP/1.1 200 OK\r\nServer: rdma_exporter\r\n"
            "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\nVary: Accept-Encoding\r\n"
            "Content-Length: 10\r\n\r\n");
  // Had a body been sent, it would be read here as the next response.
  c.send(request("GET", "/healthz"));
  EXPECT_EQ(c.response(), kHealthz);
}

TEST(HttpServer, ReloadIsForbiddenUnlessEnabledWithAHook) {
  const std::string forbidden =
      "HTTP/1.1 403 Forbidden\r\nServer: rdma_exporter\r\n"
      "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 48\r\n\r\n"
      "the lifecycle API is off (web.enable_lifecycle)\n";
  auto hook = [](std::function<void(bool, std::string)> done) { done(true, "reloaded"); };
  {
    Server off({}, nullptr, hook);
    EXPECT_EQ(get_once(off.port(), request("POST", "/-/reload")), forbidden);
    EXPECT_EQ(get_once(off.port(), request("GET", "/-/reload")), forbidden);
  }
  Config::Web on;
  on.enable_lifecycle = true;
  Server no_hook(on);
  EXPECT_EQ(get_once(no_hook.port(), request("POST", "/-/reload")), forbidden);
}

TEST(HttpServer, ReloadAnswersWithTheHooksOutcome) {
  Config::Web web;
  web.enable_lifecycle = true;
  std::atomic<int> reloads{0};
  Server server(web, nullptr, [&](std::function<void(bool, std::string)> done) {
    ++reloads;
    if (reloads == 1) return done(true, "configuration reloaded");
    done(false, "reload rejected: bad");
  });
  EXPECT_EQ(get_once(server.port(), request("GET", "/-/reload")),
            "HTTP/1.1 405 Method Not Allowed\r\nServer: rdma_exporter\r\n"
            "Content-Type: text/plain; charset=utf-8\r\nAllow: POST, PUT\r\n"
            "Content-Length: 19\r\n\r\nmethod not allowed\n");
  EXPECT_EQ(reloads, 0);
  EXPECT_EQ(get_once(server.port(), request("POST", "/-/reload")),
            "HTTP/1.1 200 OK\r\nServer: rdma_exporter\r\n"
            "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 23\r\n\r\n"
            "configuration reloaded\n");
  EXPECT_EQ(get_once(server.port(), request("PUT", "/-/reload")),
            "HTTP/1.1 500 Internal Server Error\r\nServer: rdma_exporter\r\n"
            "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 21\r\n\r\n"
            "reload rejected: bad\n");
  EXPECT_EQ(reloads, 2);
}

const std::string kHeadersTooLarge =
    "HTTP/1.1 431 Request Header Fields Too Large\r\nServer: rdma_exporter\r\n"
    "Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
    "Content-Length: 26\r\n\r\nrequest headers too large\n";

const std::string kTargetTooLong =
    "HTTP/1.1 414 URI Too Long\r\nServer: rdma_exporter\r\n"
    "Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
    "Content-Length: 24\r\n\r\nrequest target too long\n";

const std::string kBusy =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

const std::string kReloaded =
    "HTTP/1.1 200 OK\r\nServer: rdma_exporter\r\nContent-Type: text/plain; charset=utf-8\r\n"
    "Content-Length: 9\r\n\r\nreloaded\n";

// A reload hook that answers only when the test says so: a POST /-/reload
// it holds is a request in the middle of being served.
class HeldReloads {
 public:
  HttpServer::ReloadHook hook() {
    return [this](std::function<void(bool, std::string)> done) {
      std::lock_guard<std::mutex> lock(mutex_);
      held_.push_back(std::move(done));
      changed_.notify_all();
    };
  }
  // Until `n` requests are held.
  bool wait_for(std::size_t n) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, 5s, [&] { return held_.size() >= n; });
  }
  // Answers every held request "reloaded", on the event loop.
  void release(Server& server) {
    server.post([this] {
      std::vector<std::function<void(bool, std::string)>> held;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        held.swap(held_);
      }
      for (auto& done : held) done(true, "reloaded");
    });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::function<void(bool, std::string)>> held_;
};

// The line of one sample in the server's own metrics, "" when absent.
std::string stats_line(const Server& server, const std::string& series) {
  const std::string stats = server.stats();
  const auto at = stats.find("\n" + series + " ");
  if (at == std::string::npos) return "";
  return stats.substr(at + 1, stats.find('\n', at + 1) - at - 1);
}

TEST(HttpServer, AtTheCapANewConnectionIsRefusedWhenEveryOneIsServing) {
  Config::Web web;
  web.max_connections = 3;
  web.enable_lifecycle = true;
  HeldReloads reloads;
  Server server(web, nullptr, reloads.hook());
  std::vector<std::unique_ptr<Client>> busy;
  for (int i = 0; i < 3; ++i) {
    busy.push_back(std::make_unique<Client>(server.port()));
    busy.back()->send(request("POST", "/-/reload"));
  }
  ASSERT_TRUE(reloads.wait_for(3));
  Client extra(server.port());
  EXPECT_EQ(extra.until_closed(), kBusy);
  // The connections being served are served to the end.
  reloads.release(server);
  for (auto& c : busy) EXPECT_EQ(c->response(), kReloaded);
  EXPECT_EQ(stats_line(server,
                       "rdma_exporter_http_rejected_connections_total{reason=\"max_connections\"}"),
            "rdma_exporter_http_rejected_connections_total{reason=\"max_connections\"} 1");
  EXPECT_NE(server.stats().find("rdma_exporter_http_open_connections 3\n"), std::string::npos)
      << server.stats();
}

TEST(HttpServer, AtTheCapTheConnectionWaitingLongestForARequestIsEvicted) {
  Config::Web web;
  web.max_connections = 3;
  web.enable_lifecycle = true;
  web.read_timeout = 1h;
  web.header_timeout = 1h;
  web.idle_timeout = 1h;
  HeldReloads reloads;
  Server server(web, nullptr, reloads.hook());
  Client unfinished(server.port());  // waits for its headers from its accept on
  unfinished.send("GET /healthz HTTP/1.1\r\nHo");
  Client idle(server.port());  // waits for a next request from its answer on
  idle.send(request("GET", "/healthz"));
  ASSERT_EQ(idle.response(), kHealthz);
  Client busy(server.port());  // in the middle of being served
  busy.send(request("POST", "/-/reload"));
  ASSERT_TRUE(reloads.wait_for(1));

  Client second(server.port());
  EXPECT_EQ(unfinished.until_closed(), "");
  second.send(request("GET", "/healthz"));
  EXPECT_EQ(second.response(), kHealthz);
  // `idle` has waited since before `second` was accepted.
  Client third(server.port());
  EXPECT_EQ(idle.until_closed(), "");
  third.send(request("GET", "/healthz"));
  EXPECT_EQ(third.response(), kHealthz);
  Client fourth(server.port());
  EXPECT_EQ(second.until_closed(), "");

  reloads.release(server);
  EXPECT_EQ(busy.response(), kReloaded);
  const std::string evicted = "rdma_exporter_http_evicted_connections_total";
  EXPECT_EQ(stats_line(server, evicted + "{reason=\"headers\"}"),
            evicted + "{reason=\"headers\"} 1");
  EXPECT_EQ(stats_line(server, evicted + "{reason=\"idle\"}"), evicted + "{reason=\"idle\"} 2");
  EXPECT_EQ(stats_line(server, evicted + "{reason=\"tls_handshake\"}"),
            evicted + "{reason=\"tls_handshake\"} 0");
  EXPECT_EQ(stats_line(server, evicted + "{reason=\"closing\"}"),
            evicted + "{reason=\"closing\"} 0");
  EXPECT_EQ(stats_line(server,
                       "rdma_exporter_http_rejected_connections_total{reason=\"max_connections\"}"),
            "rdma_exporter_http_rejected_connections_total{reason=\"max_connections\"} 0");
}

// A connection refused 431 is drained for a while before it closes
// (AHeaderOfAMebibyteIsAnswered431); it goes before any waiting one.
TEST(HttpServer, AtTheCapAClosingConnectionIsEvictedFirst) {
  Config::Web web;
  web.max_connections = 2;
  web.max_request_bytes = 1024;
  web.read_timeout = 1h;
  web.header_timeout = 1h;
  Server server(web);
  Client waiting(server.port());
  waiting.send("GET /healthz HTTP/1.1\r\n");
  Client refused(server.port());
  refused.send(request("GET", "/healthz", "X-Pad: " + std::string(2000, 'a') + "\r\n"));
  ASSERT_EQ(refused.response(), kHeadersTooLarge);
  Client next(server.port());
  EXPECT_EQ(refused.until_closed(), "");
  waiting.send("Host: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(waiting.response(), kHealthz);
  EXPECT_EQ(stats_line(server, "rdma_exporter_http_evicted_connections_total{reason=\"closing\"}"),
            "rdma_exporter_http_evicted_connections_total{reason=\"closing\"} 1");
}

// At web.max_connections_per_source a source's new connection takes the
// place of that source's connection that has waited longest for its
// request; only when all of them are serving a request (here: reloads the
// test has not answered yet) is it refused.
TEST(HttpServer, ASourceAtItsLimitIsRefusedOnlyWhileItsConnectionsAreServed) {
  std::mutex mutex;
  std::vector<std::function<void(bool, std::string)>> reloads;
  auto reloads_pending = [&] {
    const std::lock_guard lock(mutex);
    return reloads.size();
  };
  Config::Web web;
  web.enable_lifecycle = true;
  web.max_connections_per_source = 2;
  web.read_timeout = 1h;
  web.header_timeout = 1h;
  Server server(web, nullptr, [&](std::function<void(bool, std::string)> done) {
    const std::lock_guard lock(mutex);
    reloads.push_back(std::move(done));
  });
  Client waiting(server.port(), "127.0.0.2");
  waiting.send("GET /healthz HTTP/1.1\r\n");
  Client serving(server.port(), "127.0.0.2");
  serving.send(request("POST", "/-/reload"));
  ASSERT_TRUE(testing::eventually([&] { return reloads_pending() == 1; }));
  // The source's third: in the place of the one waiting for its request.
  Client third(server.port(), "127.0.0.2");
  third.send(request("GET", "/healthz"));
  EXPECT_EQ(third.response(), kHealthz);
  EXPECT_EQ(waiting.until_closed(), "");
  // Both the source's connections serving a request: refused.
  third.send(request("POST", "/-/reload"));
  ASSERT_TRUE(testing::eventually([&] { return reloads_pending() == 2; }));
  Client refused(server.port(), "127.0.0.2");
  EXPECT_EQ(refused.until_closed(), kBusy);
  Client other(server.port(), "127.0.0.3");
  other.send(request("GET", "/healthz"));
  EXPECT_EQ(other.response(), kHealthz);
  EXPECT_EQ(
      stats_line(
          server,
          "rdma_exporter_http_rejected_connections_total{reason=\"max_connections_per_source\"}"),
      "rdma_exporter_http_rejected_connections_total{reason=\"max_connections_per_source\"} 1");
  EXPECT_EQ(stats_line(server, "rdma_exporter_http_evicted_connections_total{reason=\"headers\"}"),
            "rdma_exporter_http_evicted_connections_total{reason=\"headers\"} 1");
  // The reloads answered, the source has room again.
  // Answered and let go on the server's loop: each holds its session.
  server.post([&] {
    std::vector<std::function<void(bool, std::string)>> answer;
    {
      const std::lock_guard lock(mutex);
      answer.swap(reloads);
    }
    for (auto& done : answer) done(true, "reloaded");
  });
  EXPECT_EQ(serving.response().rfind("HTTP/1.1 200 OK\r\n", 0), 0U);
  EXPECT_EQ(third.response().rfind("HTTP/1.1 200 OK\r\n", 0), 0U);
  Client again(server.port(), "127.0.0.2");
  again.send(request("GET", "/healthz"));
  EXPECT_EQ(again.response(), kHealthz);
}

// A request of `size` bytes in all: GET /healthz with header lines
// "X-Pad: aaaa" of `line` bytes (CRLF included) and a last, shorter one.
std::string request_of_size(std::size_t size, std::size_t line = 1000000) {
  std::string req = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  const std::string pad = "X-Pad: ";
  while (size - req.size() - 2 > line)
    req += pad + std::string(line - pad.size() - 2, 'a') + "\r\n";
  req += pad + std::string(size - req.size() - pad.size() - 4, 'a') + "\r\n\r\n";
  return req;
}

const std::string kTooLarge =
    "HTTP/1.1 400 Bad Request\r\nServer: rdma_exporter\r\n"
    "Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
    "Content-Length: 18\r\n\r\nrequest too large\n";

TEST(HttpServer, MaxRequestBytesIsTheLargestRequestServed) {
  Config::Web web;
  web.max_request_bytes = 300;
  Server server(web);
  ASSERT_EQ(request_of_size(300).size(), 300u);
  EXPECT_EQ(get_once(server.port(), request_of_size(300)), kHealthz);
  EXPECT_EQ(get_once(server.port(), request_of_size(301)), kHeadersTooLarge);
}

TEST(HttpServer, MaxRequestBytesCountsEveryHeaderLine) {
  Config::Web web;
  web.max_request_bytes = 1024;
  Server server(web);
  ASSERT_EQ(request_of_size(1024, 40).size(), 1024u);
  ASSERT_EQ(request_of_size(1025, 40).size(), 1025u);
  // Two requests of the limit on one connection: each is measured alone.
  Client c(server.port());
  c.send(request_of_size(1024, 40));
  EXPECT_EQ(c.response(), kHealthz);
  c.send(request_of_size(1024, 40));
  EXPECT_EQ(c.response(), kHealthz);
  EXPECT_EQ(get_once(server.port(), request_of_size(1025, 40)), kHeadersTooLarge);
  EXPECT_EQ(get_once(server.port(), request_of_size(4000, 40)), kHeadersTooLarge);
}

TEST(HttpServer, AnUnfinishedRequestPastTheLimitIsRefusedAtOnce) {
  Config::Web web;
  web.max_request_bytes = 1024;
  web.read_timeout = 1h;
  Server server(web);
  // 1025 bytes of request line and headers, the last line unfinished.
  std::string req = request_of_size(1029, 40);
  req.resize(1025);
  Client c(server.port());
  c.send(req);
  EXPECT_EQ(c.until_closed(), kHeadersTooLarge);
}

TEST(HttpServer, ATargetPastTheLimitIs414) {
  Config::Web web;
  web.max_request_bytes = 1024;
  web.read_timeout = 1h;
  Server server(web);
  const std::string target = "/healthz?" + std::string(1100, 'q');
  EXPECT_EQ(get_once(server.port(), request("GET", target)), kTargetTooLong);
  // Unfinished: 1024 bytes of a request line with no end.
  Client c(server.port());
  c.send(request("GET", target).substr(0, 1024));
  EXPECT_EQ(c.until_closed(), kTargetTooLong);
  // A long target whose line ends within the limit, with headers past it.
  const std::string line = "GET /healthz?" + std::string(900, 'q') + " HTTP/1.1\r\n";
  EXPECT_EQ(get_once(server.port(), line + "X-Pad: " + std::string(200, 'a') + "\r\n\r\n"),
            kHeadersTooLarge);
  const std::string stats = server.stats();
  EXPECT_NE(stats.find("rdma_exporter_http_requests_total{handler=\"other\",code=\"414\"} 2\n"),
            std::string::npos)
      << stats;
  EXPECT_NE(stats.find("rdma_exporter_http_requests_total{handler=\"other\",code=\"431\"} 1\n"),
            std::string::npos)
      << stats;
}

// The server has stopped reading at the limit while the client still sends
// (its socket buffers cannot take the mebibyte): the server reads and drops
// the rest, so the client can send it all and gets the answer, not a reset.
TEST(HttpServer, AHeaderOfAMebibyteIsAnswered431) {
  Server server({});
  for (int i = 0; i < 3; ++i) {
    Client c(server.port());
    c.limit_send_buffer(64 * 1024);
    c.send(request("GET", "/healthz", "X-Big: " + std::string(1 << 20, 'b') + "\r\n"));
    EXPECT_EQ(c.until_closed(), kHeadersTooLarge) << "attempt " << i + 1;
  }
}

TEST(HttpServer, ARequestBodyIsReadWithItsRequestAndRefused) {
  Server server({});
  Client c(server.port());
  // An empty chunked body is part of its request, not the start of the next.
  c.send("POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
  EXPECT_EQ(c.response().substr(0, 32), "HTTP/1.1 405 Method Not Allowed\r");
  c.send(request("GET", "/healthz"));
  EXPECT_EQ(c.response(), kHealthz);
  // Anything in a body is too much.
  c.send("POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
  EXPECT_EQ(c.until_closed(), kTooLarge);
  EXPECT_EQ(get_once(server.port(), "POST /healthz HTTP/1.1\r\nContent-Length: 1\r\n\r\nx"),
            kTooLarge);
  // A chunk header that takes the request past web.max_request_bytes.
  EXPECT_EQ(
      get_once(server.port(), "POST /healthz HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0;" +
                                  std::string(9000, 'e')),
      kTooLarge);
}

TEST(HttpServer, MalformedRequestIs400AndCloses) {
  Server server({});
  Client c(server.port());
  c.send("GET /healthz HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n");
  EXPECT_EQ(c.until_closed(),
            "HTTP/1.1 400 Bad Request\r\nServer: rdma_exporter\r\n"
            "Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
            "Content-Length: 29\r\n\r\nmalformed request: bad field\n");
}

TEST(HttpServer, ReadTimeoutCutsASlowClient) {
  Config::Web web;
  web.read_timeout = 200ms;
  web.idle_timeout = 1h;
  web.write_timeout = 1h;
  Server server(web);
  Client slow(server.port());
  slow.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");  // never finished
  EXPECT_EQ(slow.until_closed(), "");
}

TEST(HttpServer, HeaderTimeoutCutsAClientThatNeverEndsItsHeaders) {
  Config::Web web;
  web.read_timeout = 1h;
  web.header_timeout = 200ms;
  web.idle_timeout = 1h;
  web.write_timeout = 1h;
  Server server(web);
  Client silent(server.port());  // not a byte
  Client slow(server.port());
  slow.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");  // never finished
  EXPECT_EQ(slow.until_closed(), "");
  EXPECT_EQ(silent.until_closed(), "");
}

// On a kept-alive connection the header deadline runs from the next
// request's first byte: waiting for it is bounded by web.idle_timeout alone.
TEST(HttpServer, HeaderTimeoutOfALaterRequestRunsFromItsFirstByte) {
  Config::Web web;
  web.read_timeout = 1h;
  web.header_timeout = 200ms;
  web.idle_timeout = 1h;
  web.write_timeout = 1h;
  Server server(web);
  Client c(server.port());
  c.send(request("GET", "/healthz"));
  EXPECT_EQ(c.response(), kHealthz);
  std::this_thread::sleep_for(600ms);  // three header timeouts of idleness
  c.send(request("GET", "/healthz"));
  EXPECT_EQ(c.response(), kHealthz);
  c.send("GET /hea");
  EXPECT_EQ(c.until_closed(), "");
}

TEST(HttpServer, IdleTimeoutClosesAKeptAliveConnection) {
  Config::Web web;
  web.read_timeout = 1h;
  web.idle_timeout = 200ms;
  web.write_timeout = 1h;
  Server server(web);
  Client c(server.port());
  c.send(request("GET", "/healthz"));
  EXPECT_EQ(c.response(), kHealthz);
  EXPECT_EQ(c.until_closed(), "");
}

TEST(HttpServer, ConnectionCloseIsHonoured) {
  Server server({});
  Client c(server.port());
  c.send(request("GET", "/healthz", "Connection: close\r\n"));
  EXPECT_EQ(c.until_closed(),
            "HTTP/1.1 200 OK\r\nServer: rdma_exporter\r\n"
            "Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
            "Content-Length: 3\r\n\r\nOK\n");
}

std::shared_ptr<const WebSecurity> with_user_prom() {
  auto security = std::make_shared<WebSecurity>();
  security->auth = std::make_shared<BasicAuth>(std::map<std::string, std::string>{{"prom", kHash}});
  security->headers = {{"X-Frame-Options", "deny"}};
  return security;
}

TEST(HttpServer, BasicAuthGuardsEveryPath) {
  Server server({}, with_user_prom());
  const std::string unauthorized =
      "HTTP/1.1 401 Unauthorized\r\nServer: rdma_exporter\r\n"
      "Content-Type: text/plain; charset=utf-8\r\nX-Frame-Options: deny\r\n"
      "WWW-Authenticate: Basic realm=\"rdma_exporter\", charset=\"UTF-8\"\r\n"
      "Content-Length: 13\r\n\r\nunauthorized\n";
  EXPECT_EQ(get_once(server.port(), request("GET", "/metrics")), unauthorized);
  EXPECT_EQ(get_once(server.port(), request("GET", "/nope")), unauthorized);
  // prom:secret (wrong password), then a header that is not Basic.
  EXPECT_EQ(get_once(server.port(),
                     request("GET", "/healthz", "Authorization: Basic cHJvbTpzZWNyZXQ=\r\n")),
            unauthorized);
  EXPECT_EQ(get_once(server.port(), request("GET", "/healthz", "Authorization: Bearer x\r\n")),
            unauthorized);
  EXPECT_EQ(server.collections(), 0);

  // prom:secret pass, twice on one connection (the second from memory).
  Client c(server.port());
  for (int i = 0; i < 2; ++i) {
    c.send(request("GET", "/healthz", "Authorization: Basic cHJvbTpzZWNyZXQgcGFzcw==\r\n"));
    EXPECT_EQ(c.response(),
              "HTTP/1.1 200 OK\r\nServer: rdma_exporter\r\n"
              "Content-Type: text/plain; charset=utf-8\r\nX-Frame-Options: deny\r\n"
              "Content-Length: 3\r\n\r\nOK\n");
  }
  const std::string stats = server.stats();
  EXPECT_NE(stats.find("rdma_exporter_http_auth_failures_total{reason=\"missing\"} 2\n"),
            std::string::npos)
      << stats;
  EXPECT_NE(stats.find("rdma_exporter_http_auth_failures_total{reason=\"invalid\"} 2\n"),
            std::string::npos)
      << stats;
  EXPECT_NE(stats.find("rdma_exporter_http_requests_total{handler=\"other\",code=\"401\"} 1\n"),
            std::string::npos)
      << stats;
}

// prom's password, "secret pass", is checked by a stand-in for bcrypt that
// the test holds (tests/support/password_gate.hpp).
std::shared_ptr<const WebSecurity> with_held_checks(testing::PasswordGate& gate) {
  auto security = std::make_shared<WebSecurity>();
  security->auth = std::make_shared<BasicAuth>(std::map<std::string, std::string>{{"prom", kHash}},
                                               256, gate.matcher());
  return security;
}

const std::string kGoodPassword = "Authorization: Basic cHJvbTpzZWNyZXQgcGFzcw==\r\n";
const std::string kWrongPassword = "Authorization: Basic cHJvbTpzZWNyZXQ=\r\n";
const std::string kUnauthorized =
    "HTTP/1.1 401 Unauthorized\r\nServer: rdma_exporter\r\n"
    "Content-Type: text/plain; charset=utf-8\r\n"
    "WWW-Authenticate: Basic realm=\"rdma_exporter\", charset=\"UTF-8\"\r\n"
    "Content-Length: 13\r\n\r\nunauthorized\n";

// A scraper whose credentials were checked once and are remembered; then,
// with the check thread held, two wrong passwords from 127.0.0.2: one check
// running (the scraper's was the first) and one queued behind it.
struct HeldChecks {
  HeldChecks(Server& server, testing::PasswordGate& gate)
      : scraper(server.port(), "127.0.0.9"),
        running(server.port(), "127.0.0.2"),
        queued(server.port(), "127.0.0.2") {
    scraper.send(request("GET", "/healthz", kGoodPassword));
    EXPECT_EQ(scraper.response(), kHealthz);
    gate.close();
    running.send(request("GET", "/healthz", kWrongPassword));
    EXPECT_TRUE(gate.wait_for_checks(2));
    queued.send(request("GET", "/healthz", kWrongPassword));
  }
  Client scraper;
  Client running;
  Client queued;
};

// A connection waiting for its password check is in the eviction order like
// one waiting for its request: at its source's cap a newcomer with
// remembered credentials takes its place and is answered without a check,
// while the check thread is held. A check still queued when its connection
// is evicted never runs.
TEST(HttpServer, AConnectionWaitingForItsPasswordCheckIsEvictedForANewOne) {
  testing::PasswordGate gate("secret pass");
  Config::Web web;
  web.max_connections_per_source = 2;
  Server server(web, with_held_checks(gate));
  testing::OpenAtExit opened(gate);
  HeldChecks held(server, gate);
  Client& running = held.running;
  Client& queued = held.queued;

  Client first(server.port(), "127.0.0.2");  // the source's third
  first.send(request("GET", "/healthz", kGoodPassword));
  EXPECT_EQ(first.response(), kHealthz);
  EXPECT_EQ(running.until_closed(), "");
  Client second(server.port(), "127.0.0.2");
  second.send(request("GET", "/healthz", kGoodPassword));
  EXPECT_EQ(second.response(), kHealthz);
  EXPECT_EQ(queued.until_closed(), "");

  gate.open();
  Client later(server.port(), "127.0.0.3");  // checked after every check before it
  later.send(request("GET", "/healthz", kWrongPassword));
  EXPECT_EQ(later.response(), kUnauthorized);
  EXPECT_EQ(gate.checks(), 3);  // the scraper's, `running`'s and `later`'s
  const std::string evicted = "rdma_exporter_http_evicted_connections_total";
  EXPECT_EQ(stats_line(server, evicted + "{reason=\"auth_check\"}"),
            evicted + "{reason=\"auth_check\"} 2");
  const std::string failures = "rdma_exporter_http_auth_failures_total";
  EXPECT_EQ(stats_line(server, failures + "{reason=\"invalid\"}"),
            failures + "{reason=\"invalid\"} 1");
  EXPECT_EQ(stats_line(server,
                       "rdma_exporter_http_rejected_connections_total{reason=\""
                       "max_connections_per_source\"}"),
            "rdma_exporter_http_rejected_connections_total{reason=\"max_connections_per_source\"} "
            "0");
}

// At most two checks per source are queued or running; a source's third
// wrong password is answered 401 at once, while other sources still queue
// theirs and remembered credentials need no check.
TEST(HttpServer, ASourcesThirdPasswordCheckIsAnswered401AtOnce) {
  testing::PasswordGate gate("secret pass");
  Server server({}, with_held_checks(gate));
  testing::OpenAtExit opened(gate);
  HeldChecks held(server, gate);
  Client& scraper = held.scraper;
  Client& running = held.running;
  Client& queued = held.queued;
  // Answered from memory while both wait; `queued` was read before it.
  scraper.send(request("GET", "/healthz", kGoodPassword));
  ASSERT_EQ(scraper.response(), kHealthz);

  Client third(server.port(), "127.0.0.2");
  third.send(request("GET", "/healthz", kWrongPassword));
  EXPECT_EQ(third.response(), kUnauthorized);
  Client other(server.port(), "127.0.0.3");
  other.send(request("GET", "/healthz", kWrongPassword));
  const std::string failures = "rdma_exporter_http_auth_failures_total";
  EXPECT_EQ(stats_line(server, failures + "{reason=\"throttled\"}"),
            failures + "{reason=\"throttled\"} 1");
  EXPECT_EQ(stats_line(server, failures + "{reason=\"invalid\"}"),
            failures + "{reason=\"invalid\"} 0");
  gate.open();
  for (Client* c : {&running, &queued, &other}) EXPECT_EQ(c->response(), kUnauthorized);
  EXPECT_EQ(gate.checks(), 4);
  EXPECT_EQ(stats_line(server, failures + "{reason=\"invalid\"}"),
            failures + "{reason=\"invalid\"} 3");
  EXPECT_EQ(
      stats_line(server, "rdma_exporter_http_requests_total{handler=\"/healthz\",code=\"401\"}"),
      "rdma_exporter_http_requests_total{handler=\"/healthz\",code=\"401\"} 4");
}

TEST(HttpServer, ScrapesWithinMaxAgeShareOneCollection) {
  Server server({});
  Client c(server.port());
  for (int i = 0; i < 3; ++i) {
    c.send(request("GET", "/metrics"));
    EXPECT_NE(c.response().find("\r\n\r\nrdma_up 1\n"), std::string::npos);
  }
  EXPECT_EQ(server.collections(), 1);
}

}  // namespace
}  // namespace rdma_exporter

namespace rdma_exporter {
namespace {

const std::string kNotFound =
    "HTTP/1.1 404 Not Found\r\nServer: rdma_exporter\r\n"
    "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 10\r\n\r\nnot found\n";

TEST(HttpServer, TheTelemetryPathMovesTheMetricsAndTheLandingPageLink) {
  Config::Web web;
  web.telemetry_path = "/rdma/metrics";
  Server server(web);
  Client c(server.port());
  c.send(request("GET", "/rdma/metrics"));
  EXPECT_EQ(c.response(),
            "HTTP/1.1 200 OK\r\nServer: rdma_exporter\r\n"
            "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\nVary: Accept-Encoding\r\n"
            "Content-Length: 10\r\n\r\nrdma_up 1\n");
  c.send(request("GET", "/metrics"));
  EXPECT_EQ(c.response(), kNotFound);
  c.send(request("GET", "/"));
  const std::string landing = c.response();
  EXPECT_NE(landing.find("<a href=\"rdma/metrics\">rdma/metrics</a>"), std::string::npos)
      << landing;
  EXPECT_EQ(landing.find("href=\"metrics\""), std::string::npos) << landing;
}

TEST(HttpServer, EveryListenAddressServesAndTheLimitsAreShared) {
  Config::Web web;
  web.listen_addresses = {"127.0.0.1:0", "127.0.0.2:0"};
  web.max_connections_per_source = 1;
  web.read_timeout = 1h;
  web.header_timeout = 1h;
  Server server(web);
  const auto ports = server.ports();
  // The kernel may give both listeners the same port: they are on
  // different addresses, and each is reached on its own below.
  ASSERT_EQ(ports.size(), 2U);
  {
    Client second(ports[1], "127.0.0.5", "127.0.0.2");
    second.send(request("GET", "/healthz"));
    EXPECT_EQ(second.response(), kHealthz);
  }
  // One place per source, over both listeners: the source's connection on
  // the second takes the place of its one on the first.
  Client a(ports[0], "127.0.0.3");
  a.send("GET /healthz HTTP/1.1\r\n");
  Client b(ports[1], "127.0.0.3", "127.0.0.2");
  b.send(request("GET", "/healthz"));
  EXPECT_EQ(b.response(), kHealthz);
  EXPECT_EQ(a.until_closed(), "");
  EXPECT_EQ(stats_line(server, "rdma_exporter_http_evicted_connections_total{reason=\"headers\"}"),
            "rdma_exporter_http_evicted_connections_total{reason=\"headers\"} 1");
}

TEST(HttpServer, AnAddressThatCannotBeBoundFailsTheStartAndIsNamed) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor taken(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const std::string busy = "127.0.0.1:" + std::to_string(taken.local_endpoint().port());
  SnapshotCache cache(
      io, [] { return std::make_shared<Snapshot>(); }, 1s);
  Config::Web web;
  web.listen_addresses = {"127.0.0.1:0", busy};
  HttpServer server(io, web, cache);
  const Status started = server.start();
  ASSERT_FALSE(started);
  EXPECT_EQ(started.error().message, "listen on " + busy + ": Address already in use");
  EXPECT_TRUE(server.local_endpoints().empty());
}

TEST(HttpServer, PastTheRateLimitRequestsAre429BeforeAuthentication) {
  auto security = std::make_shared<WebSecurity>();
  security->auth = std::make_shared<BasicAuth>(std::map<std::string, std::string>{{"prom", kHash}});
  security->rate_limit = {std::chrono::hours(1), 2};
  Server server({}, security);
  Client c(server.port());
  const std::string unauthorized = request("GET", "/healthz");
  c.send(unauthorized);
  EXPECT_EQ(c.response().rfind("HTTP/1.1 401 Unauthorized\r\n", 0), 0U);
  c.send(unauthorized);
  EXPECT_EQ(c.response().rfind("HTTP/1.1 401 Unauthorized\r\n", 0), 0U);
  c.send(unauthorized);
  EXPECT_EQ(c.response(),
            "HTTP/1.1 429 Too Many Requests\r\nServer: rdma_exporter\r\n"
            "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 18\r\n\r\n"
            "Too Many Requests\n");
  // Another listener or client draws on the same bucket.
  Client other(server.port(), "127.0.0.9");
  other.send(request("GET", "/metrics"));
  EXPECT_EQ(other.response().rfind("HTTP/1.1 429 Too Many Requests\r\n", 0), 0U);
  EXPECT_EQ(
      stats_line(server, "rdma_exporter_http_requests_total{handler=\"/metrics\",code=\"429\"}"),
      "rdma_exporter_http_requests_total{handler=\"/metrics\",code=\"429\"} 1");
}

}  // namespace
}  // namespace rdma_exporter
