// exporter/probe/service: the service without an RDMA device: its problems, and targets
// discovered and reported.

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

#include "common/yaml_walker.hpp"
#include "exporter/probe/control/channel.hpp"
#include "exporter/probe/control/discovery.hpp"
#include "exporter/probe/control/responder.hpp"
#include "exporter/probe/plan/targets.hpp"
#include "exporter/probe/probe.hpp"
#include "exporter/probe/stats/health.hpp"
#include "exporter/probe/verbs/device.hpp"
#include "exporter/probe/wire/auth.hpp"
#include "tests/support/closed_port.hpp"
#include "tests/support/control_client.hpp"
#include "tests/support/responder_fixture.hpp"
#include "tests/support/snapshot_query.hpp"
#include "tests/support/wait.hpp"

namespace rdma_exporter::probe {
namespace {

using boost::asio::ip::tcp;
using rdma_exporter::testing::closed_by_peer;
using rdma_exporter::testing::closed_port;
using rdma_exporter::testing::has_family;
using rdma_exporter::testing::metrics_of;
using rdma_exporter::testing::read_message;
using rdma_exporter::testing::sample;
using rdma_exporter::testing::series_count;

// The service as the daemon's collector sees it: its metrics, and what is
// wrong with the probe itself. This host may have no RDMA at all.
void write_text(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr) << path;
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

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
              problems[0] == "no RDMA port to probe from")
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

// The service asks every target for its ports: its own responder (the
// loopback target) answers with none when no port is used; a port nothing
// listens on is refused. Targets dropped from the configuration stop being
// exported.
TEST(ProbeServiceTest, TargetsAreDiscoveredAndReported) {
  ProbeOptions o;
  o.enabled = true;
  o.listen_address = "127.0.0.1:0";
  o.loopback = true;
  // No port of this host is used, RDMA or not: the hello lists none.
  o.device = "rdma_exporter_test_no_such_device";
  const std::string closed = closed_port();
  o.targets = {Target{closed, {{"rack", "r1"}}, {}, ""}};
  o.backoff_initial = std::chrono::milliseconds(10);
  o.backoff_max = std::chrono::milliseconds(20);
  ProbeService service(o);
  ASSERT_TRUE(service.start());
  const auto snapshot = [&] {
    MetricSink sink;
    service.collect(sink);
    Snapshot snap;
    snap.families = sink.take();
    return snap;
  };
  const Labels loopback = {{"target", "loopback"}};
  const Labels refused = {{"target", closed}, {"rack", "r1"}};
  Labels refused_errors = refused;
  refused_errors.emplace_back("reason", "refused");
  ASSERT_TRUE(rdma_exporter::testing::eventually([&] {
    const Snapshot s = snapshot();
    return sample(s, "rdma_probe_target_up", loopback) == 1 &&
           sample(s, "rdma_probe_discovery_errors_total", refused_errors) >= 1;
  }));
  Snapshot snap = snapshot();
  EXPECT_EQ(sample(snap, "rdma_probe_target_ports", loopback), 0);
  EXPECT_EQ(sample(snap, "rdma_probe_target_up", refused), 0);
  EXPECT_EQ(sample(snap, "rdma_probe_target_ports", refused), 0);
  // No port to probe from, so no probe series.
  EXPECT_FALSE(has_family(snap, "rdma_probe_sent_total"));

  o.targets.clear();
  service.update(o);
  service.settle();
  snap = snapshot();
  EXPECT_EQ(series_count(snap, "rdma_probe_target_up"), 1u);
  EXPECT_EQ(sample(snap, "rdma_probe_target_up", loopback), 1);
  EXPECT_EQ(series_count(snap, "rdma_probe_discovery_errors_total"), 0u);
  service.stop();
}

}  // namespace
}  // namespace rdma_exporter::probe
