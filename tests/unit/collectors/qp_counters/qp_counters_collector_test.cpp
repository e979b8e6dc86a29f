// Per-QP counter sets end to end against the fake nldev kernel's mlx5 model:
// observe, auto and manual management, attribution, aggregation, wraps, caps.

#include <gtest/gtest.h>
#include <rdma/rdma_netlink.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "collectors/qp_counters/options.hpp"
#include "collectors/qp_counters/series_book.hpp"
#include "exporter/collection.hpp"
#include "exporter/config.hpp"
#include "tests/fake_kernel/fake_nldev.hpp"
#include "tests/fake_kernel/nl_message.hpp"
#include "tests/support/fake_node_api.hpp"
#include "tests/support/snapshot_query.hpp"

namespace rdma_exporter {
namespace {

using testing::FakeDevice;
using testing::FakeNldev;
using testing::FakePort;

constexpr uint8_t kRC = 2;
constexpr uint8_t kUD = 4;

using testing::sample;
using testing::series_count;

std::size_t writes(const FakeNldev& k) {
  return static_cast<std::size_t>(
      std::count_if(k.requests.begin(), k.requests.end(), [](const auto& r) {
        return r.cmd == RDMA_NLDEV_CMD_STAT_SET || r.cmd == RDMA_NLDEV_CMD_STAT_DEL;
      }));
}

class QpCountersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    proc_ = ::testing::TempDir() + "qp_proc_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(proc_);
    add_process(100, "trainer", "/kubepods/pod-a/ctr-1");
    add_process(101, "trainer", "/kubepods/pod-b/ctr-2");
    add_process(200, "storage", "/system.slice/storage.service");
    FakeDevice mlx{.index = 1, .name = "mlx5_0"};
    mlx.ports.push_back(FakePort{.index = 1, .netdev = "ens1f0"});
    mlx.ports.push_back(FakePort{.index = 2, .netdev = "ens1f1"});
    kernel_->devices = {mlx};
    config_.sysfs.root = "/nonexistent";
    config_.collectors.set_enabled("sysfs", false);
    config_.collectors.options<QpCountersOptions>().proc_root = proc_;
  }

  void add_process(uint32_t pid, const std::string& comm, const std::string& cgroup) {
    const auto dir = std::filesystem::path(proc_) / std::to_string(pid);
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "comm") << comm << "\n";
    std::ofstream(dir / "cgroup") << "0::" << cgroup << "\n";
  }

  // The collection is made on first use, from config_ as it is then: tests
  // set config_ before touching the kernel or the collection.
  Collection& collection() {
    if (!collection_) {
      auto k = std::make_unique<FakeNldev>(std::move(*kernel_));
      k_ = k.get();
      collection_ = std::make_unique<Collection>(config_, std::move(k));
    }
    return *collection_;
  }
  FakeNldev& kernel() {
    collection();
    return *k_;
  }
  std::shared_ptr<const Snapshot> collect() { return collection().collect(); }

  FakePort& port(uint32_t p) { return kernel().device(1)->ports[p - 1]; }

  std::string proc_;
  Config config_;
  std::unique_ptr<FakeNldev> kernel_ = std::make_unique<FakeNldev>();
  FakeNldev* k_ = nullptr;
  std::unique_ptr<Collection> collection_;
};

TEST_F(QpCountersTest, ObserveExportsAutoSetsWithProcessAttributionAndWritesNothing) {
  port(1).counter_mode = RDMA_COUNTER_MODE_AUTO;
  port(1).auto_mask = RDMA_COUNTER_MASK_QP_TYPE | RDMA_COUNTER_MASK_PID;
  const uint32_t a = kernel().create_qp(1, 1, kRC, 100);
  const uint32_t b = kernel().create_qp(1, 1, kRC, 100);
  const uint32_t c = kernel().create_qp(1, 1, kUD, 200);
  kernel().traffic(1, a, "rx_write_requests", 10);
  kernel().traffic(1, b, "rx_write_requests", 5);
  kernel().traffic(1, c, "rx_write_requests", 7);

  auto s = collect();
  ASSERT_TRUE(s->all_succeeded()) << s->outcomes[3].errors.front();
  EXPECT_EQ(sample(*s, "rdma_qp_stat_rx_write_requests_total",
                   {{"device", "mlx5_0"},
                    {"port", "1"},
                    {"qp_type", "RC"},
                    {"pid", "100"},
                    {"comm", "trainer"}}),
            15.0);
  EXPECT_EQ(sample(*s, "rdma_qp_stat_rx_write_requests_total",
                   {{"qp_type", "UD"}, {"pid", "200"}, {"comm", "storage"}}),
            7.0);
  EXPECT_EQ(sample(*s, "rdma_qp_stat_sets", {{"device", "mlx5_0"}, {"port", "1"}}), 2.0);
  EXPECT_EQ(sample(*s, "rdma_qp_stat_sets", {{"port", "2"}}), 0.0);
  EXPECT_EQ(sample(*s, "rdma_qp_stat_mode_info",
                   {{"port", "1"}, {"mode", "auto"}, {"auto_by", "qp_type,pid"}}),
            1.0);
  EXPECT_EQ(sample(*s, "rdma_qp_stat_mode_info", {{"port", "2"}, {"mode", "none"}}), 1.0);
  // The port totals are the kernel's, which already include the sets.
  EXPECT_EQ(sample(*s, "rdma_port_hw_rx_write_requests_total", {{"port", "1"}}), 22.0);
  EXPECT_EQ(writes(kernel()), 0U);
  EXPECT_EQ(sample(*s, "rdma_qps", {{"port", "1"}, {"qp_type", "RC"}, {"state", "RTS"}}), 2.0);
  EXPECT_EQ(sample(*s, "rdma_qps", {{"port", "1"}, {"qp_type", "UD"}, {"state", "RTS"}}), 1.0);
}

// Processes of pods, with the node's CRI answering: each set of a pod's
// process carries its namespace, pod and container from its first
// collection; a process outside any pod gets none.
TEST_F(QpCountersTest, ProcessesOfPodsCarryTheirNamespacePodAndContainer) {
  const std::string ida = "5d1e0c4b2a39f8e7d6c5b4a3928170f6e5d4c3b2a1908f7e6d5c4b3a29180f7e";
  const std::string idb = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f91";
  add_process(300, "trainer",
              "/kubepods.slice/kubepods-burstable.slice/"
              "kubepods-burstable-pod0f3c1a2b_4d5e_4f60_8a9b_0c1d2e3f4a5b.slice/cri-containerd-" +
                  ida + ".scope");
  add_process(301, "reader", "/kubepods/besteffort/pod11112222-3333-4444-5555-666677778888/" + idb);
  testing::FakeNodeApi fake(proc_ + "/cri.sock", "");
  testing::NodeState st;
  st.containers = {{ida,
                    {{"io.kubernetes.pod.uid", "0f3c1a2b-4d5e-4f60-8a9b-0c1d2e3f4a5b"},
                     {"io.kubernetes.pod.namespace", "ns-train"},
                     {"io.kubernetes.pod.name", "job-0"},
                     {"io.kubernetes.container.name", "worker"}},
                    "worker"},
                   {idb,
                    {{"io.kubernetes.pod.uid", "11112222-3333-4444-5555-666677778888"},
                     {"io.kubernetes.pod.namespace", "ns-data"},
                     {"io.kubernetes.pod.name", "loader-7"},
                     {"io.kubernetes.container.name", "fetch"}},
                    "fetch"}};
  fake.set(st);
  config_.kubernetes.enabled = true;
  config_.kubernetes.cri_socket = proc_ + "/cri.sock";
  config_.kubernetes.pod_resources_socket = "";
  config_.kubernetes.refresh_interval = std::chrono::hours(1);
  port(1).counter_mode = RDMA_COUNTER_MODE_AUTO;
  port(1).auto_mask = RDMA_COUNTER_MASK_QP_TYPE | RDMA_COUNTER_MASK_PID;
  const uint32_t a = kernel().create_qp(1, 1, kRC, 300);
  const uint32_t b = kernel().create_qp(1, 1, kRC, 301);
  const uint32_t c = kernel().create_qp(1, 1, kUD, 200);
  kernel().traffic(1, a, "rx_write_requests", 10);
  kernel().traffic(1, b, "rx_write_requests", 4);
  kernel().traffic(1, c, "rx_write_requests", 7);
  auto s = collect();
  ASSERT_TRUE(s->all_succeeded());
  EXPECT_EQ(sample(*s, "rdma_qp_stat_rx_write_requests_total",
                   {{"pid", "300"},
                    {"comm", "trainer"},
                    {"namespace", "ns-train"},
                    {"pod", "job-0"},
                    {"container", "worker"}}),
            10.0);
  EXPECT_EQ(sample(*s, "rdma_qp_stat_rx_write_requests_total",
                   {{"pid", "301"},
                    {"comm", "reader"},
                    {"namespace", "ns-data"},
                    {"pod", "loader-7"},
                    {"container", "fetch"}}),
            4.0);
  EXPECT_EQ(sample(*s, "rdma_qp_stat_rx_write_requests_total",
                   {{"pid", "200"}, {"namespace", ""}, {"pod", ""}, {"container", ""}}),
            7.0);
  EXPECT_EQ(fake.list_containers_calls(), 1);
  // The inventory by pod: two of job-0's QPs, one of loader-7's, one of no pod.
  kernel().create_qp(1, 1, kRC, 300);
  config_.collectors.options<QpCountersOptions>().inventory_by_pod = true;
  collection().reconfigure(config_);
  s = collect();
  EXPECT_EQ(sample(*s, "rdma_qps",
                   {{"qp_type", "RC"},
                    {"state", "RTS"},
                    {"namespace", "ns-train"},
                    {"pod", "job-0"},
                    {"container", "worker"}}),
            2.0);
  EXPECT_EQ(sample(*s, "rdma_qps",
                   {{"qp_type", "RC"},
                    {"namespace", "ns-data"},
                    {"pod", "loader-7"},
                    {"container", "fetch"}}),
            1.0);
  EXPECT_EQ(sample(*s, "rdma_qps", {{"qp_type", "UD"}, {"pod", ""}}), 1.0);
}

// A set may list a QP the QP dump no longer has (destroyed in between): the
// set's labels come from the QPs that are there, never from a QP whose number
// is next to the missing one.
TEST_F(QpCountersTest, QpMissingFromTheQpDumpLendsNoLabelsOfItsNeighbour) {
  port(1).counter_mode = RDMA_COUNTER_MODE_AUTO;
  port(1).auto_mask = RDMA_COUNTER_MASK_PID;
  const uint32_t a = kernel().create_qp(1, 1, kRC, 100);
  const uint32_t b = kernel().create_qp(1, 1, kUD, 200);
  const uint32_t x = kernel().create_qp(1, 1, kRC, 100);  // in pid 100's set with a
  ASSERT_EQ(b, a + 1);
  ASSERT_EQ(x, b + 1);
  kernel().qps_missing_from_dump = {x};
  kernel().traffic(1, a, "rx_write_requests", 3);
  kernel().traffic(1, x, "rx_write_requests", 4);

  auto s = collect();
  ASSERT_TRUE(s->all_succeeded());
  EXPECT_EQ(sample(*s, "rdma_qp_stat_rx_write_requests_total",
                   {{"device", "mlx5_0"},
                    {"port", "1"},
                    {"qp_type", "RC"},
                    {"pid", "100"},
                    {"comm", "trainer"}}),
            7.0);
}

TEST_F(QpCountersTest, AggregationByCommStaysMonotonicWhenAProcessExits) {
  config_.collectors.options<QpCountersOptions>().aggregate_by = {"comm"};
  port(1).counter_mode = RDMA_COUNTER_MODE_AUTO;
  port(1).auto_mask = RDMA_COUNTER_MASK_PID;
  const uint32_t a = kernel().create_qp(1, 1, kRC, 100);
  const uint32_t b = kernel().create_qp(1, 1, kRC, 101);
  kernel().traffic(1, a, "out_of_sequence", 30);
  kernel().traffic(1, b, "out_of_sequence", 12);
  auto first = collect();
  const Labels trainer{{"device", "mlx5_0"}, {"port", "1"}, {"comm", "trainer"}};
  EXPECT_EQ(sample(*first, "rdma_qp_stat_out_of_sequence_total", trainer), 42.0);
  EXPECT_EQ(series_count(*first, "rdma_qp_stat_out_of_sequence_total"), 1U);

  kernel().exit_process(100);  // its set disappears with its last QP
  kernel().traffic(1, b, "out_of_sequence", 3);
  auto second = collect();
  EXPECT_EQ(sample(*second, "rdma_qp_stat_sets", {{"port", "1"}}), 1.0);
  EXPECT_EQ(sample(*second, "rdma_qp_stat_out_of_sequence_total", trainer), 45.0);
}

TEST_F(QpCountersTest, VanishedSetOfItsOwnSeriesIsKeptForTheRetentionThenDropped) {
  config_.collectors.options<QpCountersOptions>().retired_ttl = std::chrono::hours(1);
  port(1).counter_mode = RDMA_COUNTER_MODE_AUTO;
  port(1).auto_mask = RDMA_COUNTER_MASK_PID;
  const uint32_t a = kernel().create_qp(1, 1, kRC, 200);
  kernel().traffic(1, a, "out_of_sequence", 5);
  auto first = collect();
  EXPECT_EQ(sample(*first, "rdma_qp_stat_out_of_sequence_total", {{"pid", "200"}}), 5.0);
  kernel().exit_process(200);
  // Kept: well within retired_ttl of its last live collection.
  auto second = collect();
  EXPECT_EQ(sample(*second, "rdma_qp_stat_sets", {{"port", "1"}}), 0.0);
  EXPECT_EQ(sample(*second, "rdma_qp_stat_out_of_sequence_total", {{"pid", "200"}}), 5.0);
  // Dropped: with retired_ttl 0 any later collection is past it.
  Config shorter = config_;
  shorter.collectors.options<QpCountersOptions>().retired_ttl = std::chrono::milliseconds(0);
  collection().reconfigure(shorter);
  auto third = collect();
  EXPECT_TRUE(std::isnan(sample(*third, "rdma_qp_stat_out_of_sequence_total", {{"pid", "200"}})));
}

// Auto mode by QP type puts QPs of two processes into one set: the set has
// no single owner, so its series names none.
TEST_F(QpCountersTest, SetSharedByTwoProcessesNamesNeither) {
  port(1).counter_mode = RDMA_COUNTER_MODE_AUTO;
  port(1).auto_mask = RDMA_COUNTER_MASK_QP_TYPE;
  const uint32_t a = kernel().create_qp(1, 1, kRC, 100);
  const uint32_t b = kernel().create_qp(1, 1, kRC, 200);
  kernel().traffic(1, a, "rx_write_requests", 3);
  kernel().traffic(1, b, "rx_write_requests", 4);
  auto s = collect();
  EXPECT_EQ(sample(*s, "rdma_qp_stat_sets", {{"port", "1"}}), 1.0);
  EXPECT_EQ(series_count(*s, "rdma_qp_stat_rx_write_requests_total"), 1U);
  EXPECT_EQ(sample(*s, "rdma_qp_stat_rx_write_requests_total",
                   {{"qp_type", "RC"}, {"pid", ""}, {"comm", ""}}),
            7.0);
}

TEST_F(QpCountersTest, ThirtyTwoBitWrapOfALiveSetIsUnwrapped) {
  kernel().device(1)->counter_values_32bit = true;
  port(1).counter_mode = RDMA_COUNTER_MODE_AUTO;
  port(1).auto_mask = RDMA_COUNTER_MASK_QP_TYPE;
  const uint32_t a = kernel().create_qp(1, 1, kRC, 100);
  const uint64_t near = (1ULL << 32) - 10;
  kernel().traffic(1, a, "rx_read_requests", near);
  auto first = collect();
  EXPECT_EQ(sample(*first, "rdma_qp_stat_rx_read_requests_total", {{"qp_type", "RC"}}),
            static_cast<double>(near));
  kernel().traffic(1, a, "rx_read_requests", 25);  // the kernel value wraps to 15
  auto second = collect();
  EXPECT_EQ(sample(*second, "rdma_qp_stat_rx_read_requests_total", {{"qp_type", "RC"}}),
            static_cast<double>(near + 25));
}

TEST_F(QpCountersTest, SeriesBeyondTheCapFoldIntoOneOverflowSeries) {
  config_.collectors.options<QpCountersOptions>().max_series = 2;
  port(1).counter_mode = RDMA_COUNTER_MODE_AUTO;
  port(1).auto_mask = RDMA_COUNTER_MASK_PID;
  double total = 0;
  for (uint32_t pid : {100U, 101U, 200U, 300U}) {
    const uint32_t q = kernel().create_qp(1, 1, kRC, pid);
    kernel().traffic(1, q, "packet_seq_err", pid);
    total += pid;
  }
  auto s = collect();
  EXPECT_EQ(series_count(*s, "rdma_qp_stat_packet_seq_err_total"), 3U);
  EXPECT_EQ(sample(*s, "rdma_qp_stat_overflow_sets", {{"port", "1"}}), 2.0);
  const double overflow =
      sample(*s, "rdma_qp_stat_packet_seq_err_total", {{"qp_type", "__overflow__"}});
  EXPECT_GT(overflow, 0.0);
  double sum = 0;
  for (const auto& f : s->families) {
    if (f.name != "rdma_qp_stat_packet_seq_err_total") continue;
    for (const auto& m : f.metric) sum += m.counter.value;
  }
  EXPECT_EQ(sum, total);  // nothing lost, nothing counted twice
}

TEST_F(QpCountersTest, AutoModeIsSetOnManagedPortsAndReappliedAfterAReload) {
  config_.collectors.options<QpCountersOptions>().ports = {
      {.device = "mlx5_.*",
       .port = 1,
       .mode = QpCountersOptions::Mode::auto_mode,
       .by_qp_type = true,
       .by_pid = false}};
  collection().maintain();
  EXPECT_EQ(port(1).counter_mode, static_cast<uint32_t>(RDMA_COUNTER_MODE_AUTO));
  EXPECT_EQ(port(1).auto_mask, static_cast<uint32_t>(RDMA_COUNTER_MASK_QP_TYPE));
  EXPECT_EQ(port(2).counter_mode, static_cast<uint32_t>(RDMA_COUNTER_MODE_NONE));  // not selected
  const uint32_t q = kernel().create_qp(1, 1, kUD, 100);
  kernel().traffic(1, q, "rx_write_requests", 4);
  auto s = collect();
  EXPECT_EQ(sample(*s, "rdma_qp_stat_rx_write_requests_total", {{"qp_type", "UD"}}), 4.0);
  EXPECT_EQ(sample(*s, "rdma_qp_stat_writes_total",
                   {{"port", "1"}, {"operation", "set_auto"}, {"result", "ok"}}),
            1.0);
  EXPECT_EQ(sample(*s, "rdma_qp_stat_mode_drift", {{"port", "1"}}), 0.0);

  // Nothing to do while the port is as configured.
  const auto before = writes(kernel());
  collection().maintain();
  EXPECT_EQ(writes(kernel()), before);

  // A driver reload: the device comes back with a new index and mode none.
  FakeDevice reloaded{.index = 7, .name = "mlx5_0"};
  reloaded.ports.push_back(FakePort{.index = 1});
  kernel().devices = {reloaded};
  collection().maintain();
  EXPECT_EQ(kernel().device(7)->ports[0].counter_mode,
            static_cast<uint32_t>(RDMA_COUNTER_MODE_AUTO));
}

TEST_F(QpCountersTest, PortSetOtherwiseByAnOperatorIsLeftAloneUnlessTakenOver) {
  config_.collectors.options<QpCountersOptions>().ports = {
      {.device = "mlx5_0",
       .mode = QpCountersOptions::Mode::auto_mode,
       .by_qp_type = true,
       .by_pid = false}};
  port(1).counter_mode = RDMA_COUNTER_MODE_AUTO;
  port(1).auto_mask = RDMA_COUNTER_MASK_PID;
  collection().maintain();
  const auto& reqs = kernel().requests;
  EXPECT_TRUE(std::none_of(reqs.begin(), reqs.end(), [](const auto& r) {
    return r.cmd == RDMA_NLDEV_CMD_STAT_SET && r.port == 1U;
  }));
  EXPECT_EQ(port(1).auto_mask, static_cast<uint32_t>(RDMA_COUNTER_MASK_PID));
  EXPECT_EQ(port(2).counter_mode, static_cast<uint32_t>(RDMA_COUNTER_MODE_AUTO));
  auto s = collect();
  EXPECT_EQ(sample(*s, "rdma_qp_stat_mode_drift", {{"port", "1"}}), 1.0);
  EXPECT_EQ(sample(*s, "rdma_qp_stat_mode_drift", {{"port", "2"}}), 0.0);  // was none: set
}

TEST_F(QpCountersTest, TakeOverChangesTheModeAndBusyPortsAreReported) {
  config_.collectors.options<QpCountersOptions>().ports = {
      {.device = "mlx5_0",
       .port = 1,
       .mode = QpCountersOptions::Mode::auto_mode,
       .by_qp_type = true,
       .by_pid = false,
       .take_over = true}};
  port(1).counter_mode = RDMA_COUNTER_MODE_AUTO;
  port(1).auto_mask = RDMA_COUNTER_MASK_PID;
  kernel().create_qp(1, 1, kRC, 100);  // bound: changing the criteria is EBUSY
  collection().maintain();
  collection().maintain();
  auto s = collect();
  EXPECT_EQ(
      sample(*s, "rdma_qp_stat_writes_total", {{"operation", "set_auto"}, {"result", "EBUSY"}}),
      2.0);
  EXPECT_EQ(sample(*s, "rdma_qp_stat_mode_drift", {{"port", "1"}}), 1.0);
  kernel().exit_process(100);
  collection().maintain();
  EXPECT_EQ(port(1).auto_mask, static_cast<uint32_t>(RDMA_COUNTER_MASK_QP_TYPE));
}

TEST_F(QpCountersTest, WithoutCapNetAdminWritesFailVisibly) {
  config_.collectors.options<QpCountersOptions>().ports = {
      {.device = ".*", .mode = QpCountersOptions::Mode::auto_mode}};
  kernel().privileged = false;
  collection().maintain();
  auto s = collect();
  EXPECT_TRUE(s->all_succeeded());  // reading still works
  EXPECT_EQ(sample(*s, "rdma_qp_stat_writes_total",
                   {{"port", "1"}, {"operation", "set_auto"}, {"result", "EPERM"}}),
            1.0);
  EXPECT_EQ(sample(*s, "rdma_qp_stat_mode_drift", {{"port", "1"}}), 1.0);
  EXPECT_EQ(port(1).counter_mode, static_cast<uint32_t>(RDMA_COUNTER_MODE_NONE));
}

TEST_F(QpCountersTest, ManualRulesGiveEachMatchingProcessItsOwnSet) {
  config_.collectors.options<QpCountersOptions>().ports = {
      {.device = "mlx5_0", .port = 1, .mode = QpCountersOptions::Mode::manual}};
  config_.collectors.options<QpCountersOptions>().manual_rules = {
      {.name = "training", .comm = std::string("train.*")}};
  const uint32_t a = kernel().create_qp(1, 1, kRC, 100);
  const uint32_t b = kernel().create_qp(1, 1, kRC, 101);
  const uint32_t c = kernel().create_qp(1, 1, kRC, 200);  // storage: no rule
  kernel().create_qp(1, 1, kRC, std::nullopt, "ib_srp");  // kernel QP: never bound
  collection().maintain();
  EXPECT_EQ(port(1).counter_mode, static_cast<uint32_t>(RDMA_COUNTER_MODE_MANUAL));
  EXPECT_EQ(kernel().device(1)->counter_sets.size(), 2U);

  // A new QP of a matching process joins that process's set.
  const uint32_t a2 = kernel().create_qp(1, 1, kUD, 100);
  collection().maintain();
  EXPECT_EQ(kernel().device(1)->counter_sets.size(), 2U);
  kernel().traffic(1, a, "rx_write_requests", 3);
  kernel().traffic(1, a2, "rx_write_requests", 4);
  kernel().traffic(1, b, "rx_write_requests", 5);
  kernel().traffic(1, c, "rx_write_requests", 6);
  auto s = collect();
  EXPECT_EQ(
      sample(*s, "rdma_qp_stat_rx_write_requests_total", {{"pid", "100"}, {"comm", "trainer"}}),
      7.0);
  EXPECT_EQ(sample(*s, "rdma_qp_stat_rx_write_requests_total", {{"pid", "101"}}), 5.0);
  EXPECT_TRUE(std::isnan(sample(*s, "rdma_qp_stat_rx_write_requests_total", {{"pid", "200"}})));
  EXPECT_EQ(sample(*s, "rdma_qp_stat_writes_total", {{"operation", "bind"}, {"result", "ok"}}),
            3.0);
}

TEST_F(QpCountersTest, QpsAlreadyInACounterSetAreNotBoundAgain) {
  config_.collectors.options<QpCountersOptions>().ports = {
      {.device = "mlx5_0", .port = 1, .mode = QpCountersOptions::Mode::manual, .take_over = true}};
  config_.collectors.options<QpCountersOptions>().manual_rules = {{.name = "p", .pid = 100}};
  port(1).counter_mode = RDMA_COUNTER_MODE_AUTO;
  port(1).auto_mask = RDMA_COUNTER_MASK_PID;
  const uint32_t old_qp = kernel().create_qp(1, 1, kRC, 100);  // auto-bound before the takeover
  collection().maintain();
  collection().maintain();
  const auto& reqs = kernel().requests;
  const auto binds = std::count_if(reqs.begin(), reqs.end(), [](const auto& r) {
    return r.cmd == RDMA_NLDEV_CMD_STAT_SET && r.port == 1U;
  });
  EXPECT_EQ(binds, 1);  // only turning auto mode off
  // A QP created after the takeover is bound to a set of the process.
  const uint32_t new_qp = kernel().create_qp(1, 1, kRC, 100);
  collection().maintain();
  auto s = collect();
  EXPECT_EQ(sample(*s, "rdma_qp_stat_writes_total", {{"operation", "bind"}, {"result", "ok"}}),
            1.0);
  EXPECT_NE(old_qp, new_qp);
}

TEST_F(QpCountersTest, ReloadKeepsSeriesAndUndoesBindingsOfRemovedRules) {
  config_.collectors.options<QpCountersOptions>().ports = {
      {.device = "mlx5_0", .port = 1, .mode = QpCountersOptions::Mode::manual}};
  config_.collectors.options<QpCountersOptions>().manual_rules = {{.name = "p", .pid = 100},
                                                                  {.name = "s", .pid = 200}};
  const uint32_t a = kernel().create_qp(1, 1, kRC, 100);
  const uint32_t b = kernel().create_qp(1, 1, kRC, 200);
  collection().maintain();
  ASSERT_EQ(kernel().device(1)->counter_sets.size(), 2U);
  kernel().traffic(1, a, "rx_write_requests", 8);
  kernel().traffic(1, b, "rx_write_requests", 2);
  auto first = collect();
  EXPECT_EQ(sample(*first, "rdma_qp_stat_rx_write_requests_total", {{"pid", "100"}}), 8.0);

  Config next = config_;
  next.collectors.options<QpCountersOptions>().manual_rules = {
      {.name = "p", .pid = 100}};  // rule "s" removed
  collection().reconfigure(next);
  collection().maintain();
  ASSERT_EQ(kernel().device(1)->counter_sets.size(), 1U);  // pid 200's QP unbound
  kernel().traffic(1, a, "rx_write_requests", 1);
  auto second = collect();
  EXPECT_EQ(sample(*second, "rdma_qp_stat_rx_write_requests_total", {{"pid", "100"}}), 9.0);
  EXPECT_EQ(
      sample(*second, "rdma_qp_stat_writes_total", {{"operation", "unbind"}, {"result", "ok"}}),
      1.0);

  // No port rule left: the remaining binding is undone too.
  next.collectors.options<QpCountersOptions>().ports.clear();
  collection().reconfigure(next);
  collection().maintain();
  EXPECT_TRUE(kernel().device(1)->counter_sets.empty());
}

TEST_F(QpCountersTest, ManualRulesByCgroupAndQpType) {
  config_.collectors.options<QpCountersOptions>().ports = {
      {.device = "mlx5_0", .port = 1, .mode = QpCountersOptions::Mode::manual}};
  config_.collectors.options<QpCountersOptions>().manual_rules = {
      {.name = "pod-a-ud", .cgroup = std::string("/kubepods/pod-a/.*"), .qp_types = {"UD"}}};
  config_.collectors.options<QpCountersOptions>().cgroup_label = true;
  kernel().create_qp(1, 1, kRC, 100);
  const uint32_t ud = kernel().create_qp(1, 1, kUD, 100);
  kernel().create_qp(1, 1, kUD, 101);  // another pod
  collection().maintain();
  ASSERT_EQ(kernel().device(1)->counter_sets.size(), 1U);
  kernel().traffic(1, ud, "rx_read_requests", 9);
  auto s = collect();
  EXPECT_EQ(sample(*s, "rdma_qp_stat_rx_read_requests_total",
                   {{"qp_type", "UD"}, {"cgroup", "/kubepods/pod-a/ctr-1"}}),
            9.0);
}

TEST_F(QpCountersTest, ManualBindOnADriverWithoutPerQpCountersFailsVisibly) {
  config_.collectors.options<QpCountersOptions>().ports = {
      {.device = "mlx5_0", .port = 1, .mode = QpCountersOptions::Mode::manual}};
  config_.collectors.options<QpCountersOptions>().manual_rules = {{.name = "all", .pid = 100}};
  kernel().device(1)->qp_counters_supported = false;  // rxe
  kernel().create_qp(1, 1, kRC, 100);
  collection().maintain();
  collection().maintain();
  auto s = collect();
  EXPECT_EQ(sample(*s, "rdma_qp_stat_writes_total", {{"operation", "bind"}, {"result", "ENOMEM"}}),
            2.0);
  EXPECT_TRUE(s->all_succeeded());
}

TEST_F(QpCountersTest, RestoreOnExitPutsBackTheModeAndUndoesBindings) {
  config_.collectors.options<QpCountersOptions>().ports = {
      {.device = "mlx5_0",
       .port = 1,
       .mode = QpCountersOptions::Mode::auto_mode,
       .restore_on_exit = true},
      {.device = "mlx5_0",
       .port = 2,
       .mode = QpCountersOptions::Mode::manual,
       .restore_on_exit = true}};
  config_.collectors.options<QpCountersOptions>().manual_rules = {{.name = "p", .pid = 100}};
  kernel().create_qp(1, 2, kRC, 100);
  collection().maintain();
  EXPECT_EQ(port(1).counter_mode, static_cast<uint32_t>(RDMA_COUNTER_MODE_AUTO));
  EXPECT_EQ(port(2).counter_mode, static_cast<uint32_t>(RDMA_COUNTER_MODE_MANUAL));
  collection().restore_kernel_state();
  EXPECT_EQ(port(1).counter_mode, static_cast<uint32_t>(RDMA_COUNTER_MODE_NONE));
  EXPECT_EQ(port(2).counter_mode, static_cast<uint32_t>(RDMA_COUNTER_MODE_NONE));
  EXPECT_TRUE(kernel().device(1)->counter_sets.empty());
}

TEST_F(QpCountersTest, DisabledOrUnsupportedIsNotAFailure) {
  kernel().absent = true;
  auto s = collect();
  EXPECT_TRUE(s->all_succeeded());
  EXPECT_EQ(series_count(*s, "rdma_qp_stat_sets"), 0U);
}

// ------------------------------------------------------------------ series book
// SeriesBook on its own, with the clock in the test's hands.

using Clock = SeriesBook::Clock;
using std::chrono::minutes;

const SeriesBook::Key kKey{"mlx5_0", "1", "RC"};

std::vector<nldev::HwCounter> rx_writes(uint64_t v) {
  return {{"rx_write_requests", v}};
}

SeriesBook::Observation seen(uint32_t set, const std::vector<nldev::HwCounter>& counters) {
  return {{"mlx5_0", 1, set}, kKey, &counters};
}

// The series' rx_write_requests value, NaN when the series is not exported.
double value(const std::vector<SeriesBook::Series>& series) {
  for (const auto& s : series) {
    if (s.key == kKey) return s.values.at("rx_write_requests");
  }
  return std::nan("");
}

TEST(SeriesBook, ThirtyTwoBitWrapIsUnwrapped) {
  SeriesBook book(100, minutes(10));
  const Clock::time_point t0{};
  const auto before = rx_writes(4294967290ULL);  // 2^32 - 6
  EXPECT_EQ(value(book.update({seen(1, before)}, nullptr, t0)), 4294967290.0);
  const auto after = rx_writes(4);  // 10 more, past the wrap
  EXPECT_EQ(value(book.update({seen(1, after)}, nullptr, t0 + minutes(1))), 4294967300.0);
}

// A value that falls from beyond 32 bits cannot be a 32-bit wrap: the
// counter restarted, and the series counts on from the new value instead
// of jumping by 2^64.
TEST(SeriesBook, SixtyFourBitCounterThatFallsIsNotUnwrapped) {
  SeriesBook book(100, minutes(10));
  const Clock::time_point t0{};
  const auto big = rx_writes(5000000000ULL);
  EXPECT_EQ(value(book.update({seen(1, big)}, nullptr, t0)), 5000000000.0);
  const auto small = rx_writes(100);
  EXPECT_EQ(value(book.update({seen(1, small)}, nullptr, t0 + minutes(1))), 5000000100.0);
}

TEST(SeriesBook, SetsThatRetireOneAfterTheOtherKeepTheSum) {
  SeriesBook book(100, minutes(10));
  const Clock::time_point t0{};
  const auto a = rx_writes(30);
  const auto b = rx_writes(12);
  EXPECT_EQ(value(book.update({seen(1, a), seen(2, b)}, nullptr, t0)), 42.0);
  EXPECT_EQ(value(book.update({seen(2, b)}, nullptr, t0 + minutes(1))), 42.0);
  EXPECT_EQ(value(book.update({}, nullptr, t0 + minutes(2))), 42.0);
}

TEST(SeriesBook, RetiredSeriesIsExportedForRetiredTtlThenDropped) {
  SeriesBook book(100, minutes(10));
  const Clock::time_point t0{};
  const auto a = rx_writes(5);
  EXPECT_EQ(value(book.update({seen(1, a)}, nullptr, t0)), 5.0);
  const auto kept = book.update({}, nullptr, t0 + minutes(9));
  EXPECT_EQ(value(kept), 5.0);
  ASSERT_EQ(kept.size(), 1U);
  EXPECT_EQ(kept[0].live_sets, 0U);
  EXPECT_TRUE(book.update({}, nullptr, t0 + minutes(11)).empty());
}

// The series as "key: name=value ..." lines, in the order returned.
std::vector<std::string> listing(const std::vector<SeriesBook::Series>& series) {
  std::vector<std::string> out;
  for (const auto& s : series) {
    std::string line;
    for (const auto& part : s.key) line += (line.empty() ? "" : "/") + part;
    line += ":";
    for (const auto& [name, v] : s.values) {
      line += " " + name + "=" + std::to_string(static_cast<uint64_t>(v));
    }
    out.push_back(line);
  }
  return out;
}

SeriesBook::Observation seen_as(const SeriesBook::Key& key, uint32_t port, uint32_t set,
                                const std::vector<nldev::HwCounter>& counters) {
  return {{key[0], port, set}, key, &counters};
}

SeriesBook::Key overflow_of(const SeriesBook::Key& key) {
  return {key[0], key[1], "__overflow__"};
}

// Series come out ordered by key, and their values by counter name, however
// the sets and their counters were listed; a series added later takes its
// place in that order.
TEST(SeriesBook, SeriesAndValuesComeOutInOrder) {
  SeriesBook book(100, minutes(10));
  const Clock::time_point t0{};
  const std::vector<nldev::HwCounter> c{
      {"rx_write_requests", 3}, {"out_of_sequence", 1}, {"rx_read_requests", 2}};
  const SeriesBook::Key b_ud{"mlx5_1", "1", "UD"}, a2_ud{"mlx5_0", "2", "UD"},
      a1_ud{"mlx5_0", "1", "UD"}, a1_rc{"mlx5_0", "1", "RC"}, a1_gsi{"mlx5_0", "1", "GSI"};
  const auto first = book.update({seen_as(a1_ud, 1, 3, c), seen_as(b_ud, 1, 1, c),
                                  seen_as(a1_rc, 1, 4, c), seen_as(a2_ud, 2, 2, c)},
                                 nullptr, t0);
  const std::vector<std::string> want_first{
      "mlx5_0/1/RC: out_of_sequence=1 rx_read_requests=2 rx_write_requests=3",
      "mlx5_0/1/UD: out_of_sequence=1 rx_read_requests=2 rx_write_requests=3",
      "mlx5_0/2/UD: out_of_sequence=1 rx_read_requests=2 rx_write_requests=3",
      "mlx5_1/1/UD: out_of_sequence=1 rx_read_requests=2 rx_write_requests=3"};
  EXPECT_EQ(listing(first), want_first);

  const auto second =
      book.update({seen_as(a1_ud, 1, 3, c), seen_as(b_ud, 1, 1, c), seen_as(a1_rc, 1, 4, c),
                   seen_as(a1_gsi, 1, 5, c), seen_as(a2_ud, 2, 2, c)},
                  nullptr, t0 + minutes(1));
  const std::vector<std::string> want_second{
      "mlx5_0/1/GSI: out_of_sequence=1 rx_read_requests=2 rx_write_requests=3",
      "mlx5_0/1/RC: out_of_sequence=1 rx_read_requests=2 rx_write_requests=3",
      "mlx5_0/1/UD: out_of_sequence=1 rx_read_requests=2 rx_write_requests=3",
      "mlx5_0/2/UD: out_of_sequence=1 rx_read_requests=2 rx_write_requests=3",
      "mlx5_1/1/UD: out_of_sequence=1 rx_read_requests=2 rx_write_requests=3"};
  EXPECT_EQ(listing(second), want_second);
}

// A counter a set lists only from some collection on starts from its first
// value, and the set's other counters keep counting, whatever place each
// takes in the list.
TEST(SeriesBook, CounterListedOnlyFromALaterCollectionOn) {
  SeriesBook book(100, minutes(10));
  const Clock::time_point t0{};
  const std::vector<nldev::HwCounter> one{{"rx_write_requests", 10}};
  EXPECT_EQ(listing(book.update({seen(1, one)}, nullptr, t0)),
            (std::vector<std::string>{"mlx5_0/1/RC: rx_write_requests=10"}));
  const std::vector<nldev::HwCounter> two{{"rx_read_requests", 7}, {"rx_write_requests", 15}};
  EXPECT_EQ(listing(book.update({seen(1, two)}, nullptr, t0 + minutes(1))),
            (std::vector<std::string>{"mlx5_0/1/RC: rx_read_requests=7 rx_write_requests=15"}));
  // Listed the other way round; rx_read_requests wraps (7 -> 2^32 + 3).
  const std::vector<nldev::HwCounter> swapped{{"rx_write_requests", 20}, {"rx_read_requests", 3}};
  EXPECT_EQ(
      listing(book.update({seen(1, swapped)}, nullptr, t0 + minutes(2))),
      (std::vector<std::string>{"mlx5_0/1/RC: rx_read_requests=4294967299 rx_write_requests=20"}));
}

// A set id that another group takes over: the old group keeps the values it
// had (retired), the new one counts from the set's current values, and back.
TEST(SeriesBook, SetIdReusedByAnotherGroup) {
  SeriesBook book(100, minutes(10));
  const Clock::time_point t0{};
  const SeriesBook::Key a{"mlx5_0", "1", "RC"}, b{"mlx5_0", "1", "UD"};
  const auto v100 = rx_writes(100), v30 = rx_writes(30), v35 = rx_writes(35), v40 = rx_writes(40);
  EXPECT_EQ(listing(book.update({seen_as(a, 1, 7, v100)}, nullptr, t0)),
            (std::vector<std::string>{"mlx5_0/1/RC: rx_write_requests=100"}));
  auto s = book.update({seen_as(b, 1, 7, v30)}, nullptr, t0 + minutes(1));
  EXPECT_EQ(listing(s), (std::vector<std::string>{"mlx5_0/1/RC: rx_write_requests=100",
                                                  "mlx5_0/1/UD: rx_write_requests=30"}));
  ASSERT_EQ(s.size(), 2U);
  EXPECT_EQ(s[0].live_sets, 0U);
  EXPECT_EQ(s[1].live_sets, 1U);
  EXPECT_EQ(listing(book.update({seen_as(b, 1, 7, v35)}, nullptr, t0 + minutes(2))),
            (std::vector<std::string>{"mlx5_0/1/RC: rx_write_requests=100",
                                      "mlx5_0/1/UD: rx_write_requests=35"}));
  EXPECT_EQ(listing(book.update({seen_as(a, 1, 7, v40)}, nullptr, t0 + minutes(3))),
            (std::vector<std::string>{"mlx5_0/1/RC: rx_write_requests=140",
                                      "mlx5_0/1/UD: rx_write_requests=35"}));
}

// A set listed twice in one collection counts once, as first listed.
TEST(SeriesBook, SetListedTwiceCountsOnce) {
  SeriesBook book(100, minutes(10));
  const Clock::time_point t0{};
  const SeriesBook::Key a{"mlx5_0", "1", "RC"}, b{"mlx5_0", "1", "UD"};
  const auto v30 = rx_writes(30), v50 = rx_writes(50);
  EXPECT_EQ(listing(book.update({seen_as(a, 1, 7, v30), seen_as(b, 1, 7, v50)}, nullptr, t0)),
            (std::vector<std::string>{"mlx5_0/1/RC: rx_write_requests=30"}));
}

// Past max_series, new series fold into their port's overflow series; the
// folded sets are counted per port, however the ports alternate.
TEST(SeriesBook, OverflowFoldsPerPort) {
  SeriesBook book(1, minutes(10));
  const Clock::time_point t0{};
  const SeriesBook::Key x{"mlx5_0", "1", "RC"}, y{"mlx5_0", "2", "RC"}, z{"mlx5_0", "1", "UD"},
      w{"mlx5_0", "2", "UD"};
  const auto v1 = rx_writes(1), v2 = rx_writes(2), v4 = rx_writes(4), v8 = rx_writes(8);
  for (int round = 0; round < 2; ++round) {
    const auto s = book.update(
        {seen_as(x, 1, 1, v1), seen_as(y, 2, 2, v2), seen_as(z, 1, 3, v4), seen_as(w, 2, 4, v8)},
        overflow_of, t0 + minutes(round));
    EXPECT_EQ(listing(s), (std::vector<std::string>{"mlx5_0/1/RC: rx_write_requests=1",
                                                    "mlx5_0/1/__overflow__: rx_write_requests=4",
                                                    "mlx5_0/2/__overflow__: rx_write_requests=10"}))
        << round;
    ASSERT_EQ(s.size(), 3U);
    EXPECT_FALSE(s[0].overflow);
    EXPECT_TRUE(s[1].overflow);
    EXPECT_EQ(s[2].live_sets, 2U);
    const std::map<std::pair<std::string, uint32_t>, std::size_t> want{{{"mlx5_0", 1}, 1},
                                                                       {{"mlx5_0", 2}, 2}};
    EXPECT_EQ(book.folded(), want) << round;
  }
}

// A set folded into the overflow series moves to its own series once old
// series were dropped and there is room again; its values until then stay
// in the overflow series.
TEST(SeriesBook, FoldedSetTakesItsOwnSeriesOnceThereIsRoom) {
  SeriesBook book(2, minutes(10));
  const Clock::time_point t0{};
  const SeriesBook::Key x{"mlx5_0", "1", "RC"}, y{"mlx5_0", "1", "SRQ"}, z{"mlx5_0", "1", "UD"};
  const auto v1 = rx_writes(1), v2 = rx_writes(2), v4 = rx_writes(4), v6 = rx_writes(6),
             v7 = rx_writes(7);
  EXPECT_EQ(listing(book.update({seen_as(x, 1, 1, v1), seen_as(y, 1, 2, v2), seen_as(z, 1, 3, v4)},
                                overflow_of, t0)),
            (std::vector<std::string>{"mlx5_0/1/RC: rx_write_requests=1",
                                      "mlx5_0/1/SRQ: rx_write_requests=2",
                                      "mlx5_0/1/__overflow__: rx_write_requests=4"}));
  // x and y are gone for longer than retired_ttl: dropped after this update.
  EXPECT_EQ(listing(book.update({seen_as(z, 1, 3, v6)}, overflow_of, t0 + minutes(11))),
            (std::vector<std::string>{"mlx5_0/1/__overflow__: rx_write_requests=6"}));
  EXPECT_EQ(book.folded().size(), 1U);
  EXPECT_EQ(listing(book.update({seen_as(z, 1, 3, v7)}, overflow_of, t0 + minutes(12))),
            (std::vector<std::string>{"mlx5_0/1/UD: rx_write_requests=7",
                                      "mlx5_0/1/__overflow__: rx_write_requests=6"}));
  EXPECT_TRUE(book.folded().empty());
}

// A set folded last time joins its key's own series when another set made
// that series earlier in the same collection (the limit was raised).
TEST(SeriesBook, FoldedSetJoinsItsSeriesMadeMeanwhile) {
  SeriesBook book(1, minutes(10));
  const Clock::time_point t0{};
  const SeriesBook::Key x{"mlx5_0", "1", "RC"}, z{"mlx5_0", "1", "UD"};
  const auto v1 = rx_writes(1), v4 = rx_writes(4), v5 = rx_writes(5), v8 = rx_writes(8);
  EXPECT_EQ(listing(book.update({seen_as(x, 1, 1, v1), seen_as(z, 1, 3, v4)}, overflow_of, t0)),
            (std::vector<std::string>{"mlx5_0/1/RC: rx_write_requests=1",
                                      "mlx5_0/1/__overflow__: rx_write_requests=4"}));
  book.set_limits(3, minutes(10));
  const auto s = book.update({seen_as(z, 1, 4, v8), seen_as(x, 1, 1, v1), seen_as(z, 1, 3, v5)},
                             overflow_of, t0 + minutes(1));
  EXPECT_EQ(listing(s), (std::vector<std::string>{"mlx5_0/1/RC: rx_write_requests=1",
                                                  "mlx5_0/1/UD: rx_write_requests=13",
                                                  "mlx5_0/1/__overflow__: rx_write_requests=4"}));
  ASSERT_EQ(s.size(), 3U);
  EXPECT_EQ(s[1].live_sets, 2U);
  EXPECT_EQ(s[2].live_sets, 0U);
  EXPECT_TRUE(book.folded().empty());
}

// A series dropped after retired_ttl starts afresh when its group returns.
TEST(SeriesBook, DroppedSeriesStartsAfreshWhenItsGroupReturns) {
  SeriesBook book(100, minutes(10));
  const Clock::time_point t0{};
  const auto a = rx_writes(5), b = rx_writes(7);
  EXPECT_EQ(value(book.update({seen(1, a)}, nullptr, t0)), 5.0);
  EXPECT_TRUE(book.update({}, nullptr, t0 + minutes(11)).empty());
  EXPECT_EQ(value(book.update({seen(2, b)}, nullptr, t0 + minutes(12))), 7.0);
  EXPECT_EQ(value(book.update({seen(2, b)}, nullptr, t0 + minutes(13))), 7.0);
}

// Kernels before 5.3 have no per-QP counters and answer the counter mode
// query with EINVAL (or EOPNOTSUPP): nothing to export, and no failure.
TEST_F(QpCountersTest, KernelWithoutPerQpCountersIsNotAFailure) {
  for (int err : {EINVAL, EOPNOTSUPP}) {
    kernel_ = std::make_unique<FakeNldev>();
    FakeDevice mlx{.index = 1, .name = "mlx5_0"};
    mlx.ports.push_back(FakePort{.index = 1});
    kernel_->devices = {mlx};
    kernel_->tamper = [err](netlink::Reply& r) {
      const auto* nlh = reinterpret_cast<const nlmsghdr*>(r.datagrams.front().data());
      if (RDMA_NL_GET_OP(nlh->nlmsg_type) != RDMA_NLDEV_CMD_STAT_GET) return;
      for (const nlattr* a : testing::attributes(nlh)) {
        if (mnl_attr_get_type(a) == RDMA_NLDEV_ATTR_STAT_MODE) {
          r = netlink::Reply{{testing::error_message(-err)}};
          return;
        }
      }
    };
    collection_.reset();
    auto s = collect();
    EXPECT_TRUE(s->all_succeeded()) << err;
    EXPECT_EQ(series_count(*s, "rdma_qp_stat_mode_info"), 0U) << err;
    EXPECT_EQ(sample(*s, "rdma_port_state", {{"device", "mlx5_0"}, {"port", "1"}}), 4.0) << err;
  }
}

TEST(QpCountersConfig, SectionIsParsedAndValidated) {
  Config c;
  auto errors = parse_config(R"(
qp_counters:
  ports:
    - {device: "mlx5_.*", port: 1, mode: auto, auto_by: [pid], restore_on_exit: true}
    - {device: rxe0, mode: manual, take_over: true}
  manual_rules:
    - {name: train, comm: "python.*", qp_types: [RC, UD]}
  aggregate_by: [comm]
  max_series: 50
  reconcile_interval: 5s
)",
                             "q.yml", c);
  ASSERT_TRUE(errors.empty()) << errors.front();
  ASSERT_EQ(c.collectors.options<QpCountersOptions>().ports.size(), 2U);
  EXPECT_EQ(c.collectors.options<QpCountersOptions>().ports[0].mode,
            QpCountersOptions::Mode::auto_mode);
  EXPECT_FALSE(c.collectors.options<QpCountersOptions>().ports[0].by_qp_type);
  EXPECT_TRUE(c.collectors.options<QpCountersOptions>().ports[0].by_pid);
  EXPECT_EQ(c.collectors.options<QpCountersOptions>().ports[1].mode,
            QpCountersOptions::Mode::manual);
  EXPECT_EQ(c.collectors.options<QpCountersOptions>().manual_rules[0].qp_types,
            (std::vector<std::string>{"RC", "UD"}));
  EXPECT_EQ(c.collectors.options<QpCountersOptions>().max_series, 50U);

  Config bad;
  errors = parse_config(R"(
qp_counters:
  ports:
    - {mode: sometimes}
    - {mode: auto, auto_by: []}
  manual_rules:
    - {name: empty}
    - {name: t, qp_types: [XX]}
  aggregate_by: [host]
)",
                        "q.yml", bad);
  EXPECT_EQ(errors.size(), 5U) << ::testing::PrintToString(errors);
}

}  // namespace
}  // namespace rdma_exporter
