// fake_rdma_host: the exporter's own collection and HTTP server in front of
// the fake kernel interfaces (nldev, DCB, ethtool), with traffic that keeps
// flowing. The dashboard tests scrape it with a real Prometheus to get
// netlink-shaped data (mlx5 port and per-QP counters, port states, QP
// inventory) on machines without RDMA hardware. It is a test tool, never
// installed.
//
// Usage: fake_rdma_host [--once] --web.listen-address HOST:PORT --path.sysfs DIR --path.proc DIR
//                       [--kubernetes.sockets CRI_SOCKET,POD_RESOURCES_SOCKET]
//                       [--rnics N [--processes P] [--probe-pairs GROUP,REMOTE
//                        [--pair-series all|failing]]]
// With --kubernetes.sockets the kubernetes section is on with those sockets
// (a fake_node_api_server's), and the QP inventory is by pod.
// With --once it collects once (after one round of kernel-state maintenance),
// prints the exposition and exits: the golden exposition's source
// (tests/golden/).
// The proc directory must hold <pid>/comm and <pid>/cgroup for pids 100,
// 101, 200 and 300 (the processes of the mixed host, live_host.hpp).
// With --rnics the host is a rail host instead (rail_host_kernel): N
// single-port mlx5 RoCE devices, mlx5_0 to mlx5_<N-1> (a sysfs tree of
// "mlx5:N:1"), netdevs ens<i>np0, and P processes (pids 1000 to 1000+P-1 in
// the proc directory, 8 by default) with an RC QP on every port; with
// --probe-pairs it also serves the probe's series of a fleet-mode host whose
// ports each probe GROUP targets of their own group and REMOTE of others
// (tests/support/fleet_probe_host.hpp), its pairs in the shape
// probe.pair_series names (all by default). The series budget test
// (tests/integration/test_series_budget.py) counts its exposition.

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collectors/qp_counters/options.hpp"
#include "common/log.hpp"
#include "exporter/collection.hpp"
#include "exporter/config.hpp"
#include "exporter/http/server.hpp"
#include "exporter/snapshot_cache.hpp"
#include "tests/fake_kernel/live_host.hpp"
#include "tests/support/fleet_probe_host.hpp"

namespace rdma_exporter::testing {
namespace {

int usage(const char* message) {
  std::fprintf(
      stderr,
      "fake_rdma_host: %s\nUsage: fake_rdma_host [--once] --web.listen-address HOST:PORT "
      "--path.sysfs DIR --path.proc DIR [--kubernetes.sockets CRI,POD_RESOURCES] "
      "[--rnics N [--processes P] [--probe-pairs GROUP,REMOTE [--pair-series all|failing]]]\n",
      message);
  return 2;
}

// A whole number from 0 to 4096.
bool parse_count(const std::string& text, uint32_t& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out <= 4096;
}

int run(int argc, char** argv) {
  Config config;
  auto& qp_counters = config.collectors.options<QpCountersOptions>();
  config.web.listen_addresses = {"127.0.0.1:0"};
  bool once = false;
  uint32_t rnics = 0;
  uint32_t processes = 8;
  std::optional<std::pair<uint32_t, uint32_t>> probe_pairs;
  bool pair_counters = true;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--once") {
      once = true;
      continue;
    }
    if (i + 1 >= argc) return usage("every option needs a value");
    const std::string value = argv[++i];
    if (arg == "--web.listen-address") {
      config.web.listen_addresses = {value};
    } else if (arg == "--path.sysfs") {
      config.sysfs.root = value;
    } else if (arg == "--path.proc") {
      qp_counters.proc_root = value;
    } else if (arg == "--kubernetes.sockets") {
      const auto comma = value.find(',');
      if (comma == std::string::npos) return usage("--kubernetes.sockets takes CRI,POD_RESOURCES");
      config.kubernetes.enabled = true;
      config.kubernetes.cri_socket = value.substr(0, comma);
      config.kubernetes.pod_resources_socket = value.substr(comma + 1);
      qp_counters.inventory_by_pod = true;
    } else if (arg == "--rnics") {
      if (!parse_count(value, rnics) || rnics == 0) return usage("--rnics takes 1 to 4096");
    } else if (arg == "--processes") {
      if (!parse_count(value, processes)) return usage("--processes takes 0 to 4096");
    } else if (arg == "--probe-pairs") {
      const auto comma = value.find(',');
      uint32_t group = 0, remote = 0;
      if (comma == std::string::npos || !parse_count(value.substr(0, comma), group) ||
          !parse_count(value.substr(comma + 1), remote)) {
        return usage("--probe-pairs takes GROUP,REMOTE, each 0 to 4096");
      }
      probe_pairs = std::make_pair(group, remote);
    } else if (arg == "--pair-series") {
      if (value != "all" && value != "failing") return usage("--pair-series takes all or failing");
      pair_counters = value == "all";
    } else {
      return usage("unknown option");
    }
  }
  if (probe_pairs && rnics == 0) return usage("--probe-pairs needs --rnics");
  if (rnics == 0) {
    // The mixed host: labels and managed ports beyond the defaults, so that
    // their series exist. Managed ports (found in mode none: the exporter
    // switches them to auto), so that the management metrics exist.
    qp_counters.cgroup_label = true;
    qp_counters.inventory_by_comm = true;
    qp_counters.ports.push_back(
        {.device = "mlx5_1", .port = 0, .mode = QpCountersOptions::Mode::auto_mode});
  }
  config.collection.once = once;
  if (auto errors = validate_config(config); !errors.empty()) return usage(errors.front().c_str());

  KernelInterfaces kernel = rnics == 0 ? mixed_host_kernel() : rail_host_kernel(rnics, processes);
  Collection collection(config, std::move(kernel));
  if (probe_pairs) {
    auto stats = std::make_shared<probe::ProbeStats>();
    const auto [group, remote] = *probe_pairs;
    // Target hosts: the group's, and every rail's remote picks on hosts of
    // their own (the most there can be).
    fill_fleet_probe_stats(
        *stats,
        std::vector<FleetProbePort>(rnics, FleetProbePort{group + remote, group > 0, remote > 0}),
        group + std::size_t{remote} * rnics, {}, pair_counters);
    collection.add_self_metrics([stats](MetricSink& sink) { stats->add_metrics(sink); });
  }
  if (once) {
    collection.maintain();
    const auto snapshot = collection.collect();
    std::fwrite(snapshot->text.data(), 1, snapshot->text.size(), stdout);
    return snapshot->all_succeeded() ? 0 : 1;
  }
  boost::asio::io_context io;
  SnapshotCache cache(io, collection, config.collection.max_age);
  HttpServer server(io, config.web, cache);
  collection.add_self_metrics(
      [stats = server.stats()](MetricSink& sink) { stats->add_metrics(sink); });

  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) return;
    server.stop([&io] { io.stop(); });
    cache.stop([](Collection& c) { c.restore_kernel_state(); });
  });
  if (Status s = server.start(); !s) {
    log::error("starting the HTTP server failed", {{"err", s.error().message}});
    return 1;
  }
  cache.start_maintenance(collection.maintenance_interval());
  const auto ep = server.local_endpoint();
  log::info("fake RDMA host listening on",
            {{"address", ep.address().to_string() + ":" + std::to_string(ep.port())}});
  io.run();
  return 0;
}

}  // namespace
}  // namespace rdma_exporter::testing

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return rdma_exporter::testing::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fake_rdma_host: %s\n", e.what());
    return 1;
  }
}
