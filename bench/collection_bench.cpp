// Cost of one collection, measured in-process with Google Benchmark.
// The sysfs tree is 8 mlx5-like devices with 2 ports each (the same tree the
// scrape comparison with node_exporter uses); the netlink side is the fake
// nldev kernel with the same devices and mlx5's port hw counters.

#include <benchmark/benchmark.h>
#include <rdma/rdma_netlink.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>

#include "collectors/ethtool/mapping.hpp"
#include "collectors/qp_counters/options.hpp"
#include "exporter/collection.hpp"
#include "exporter/formats/gzip.hpp"
#include "exporter/formats/text.hpp"
#include "tests/fake_kernel/driver_counters.hpp"
#include "tests/fake_kernel/fake_dcb.hpp"
#include "tests/fake_kernel/fake_ethnl.hpp"
#include "tests/fake_kernel/fake_ethtool.hpp"
#include "tests/fake_kernel/fake_module.hpp"
#include "tests/fake_kernel/fake_nldev.hpp"
#include "tests/support/sysfs_tree.hpp"

namespace rdma_exporter {
namespace {

// The sysfs tree of `spec` (support/sysfs_tree.hpp), made once per run.
const std::string& sysfs_tree(const std::string& spec = "mlx5:8:2") {
  static std::map<std::string, std::string> made;
  auto [it, inserted] = made.try_emplace(spec);
  if (inserted) {
    std::string dir = "/tmp/rdma_exporter_bench_sysfs";
    for (char c : spec) dir += std::isalnum(static_cast<unsigned char>(c)) != 0 ? c : '_';
    testing::write_sysfs_tree(dir, spec);
    it->second = dir;
  }
  return it->second;
}

std::unique_ptr<testing::FakeNldev> mlx5_kernel(uint32_t devices = 8) {
  auto k = std::make_unique<testing::FakeNldev>();
  for (uint32_t d = 0; d < devices; ++d) {
    testing::FakeDevice dev{.index = d + 1,
                            .name = "mlx5_" + std::to_string(d),
                            .fw_version = "16.35.2000",
                            .node_guid = 0x98039b0300340000ULL + d};
    for (uint32_t p = 1; p <= 2; ++p) {
      testing::FakePort port{.index = p,
                             .netdev = "ens" + std::to_string(d) + "f" + std::to_string(p)};
      for (const auto& c : testing::mlx5_port_counters()) {
        port.counters.emplace_back(c, 123456789ULL * p + d);
      }
      dev.ports.push_back(std::move(port));
    }
    dev.resources = {{"pd", 3},  {"cq", 10}, {"qp", 40}, {"cm_id", 0},
                     {"mr", 12}, {"ctx", 2}, {"srq", 0}};
    k->devices.push_back(std::move(dev));
  }
  return k;
}

// The fake nldev kernel with no netdev statistics or DCB behind it.
KernelInterfaces fake_kernel(std::unique_ptr<testing::FakeNldev> nldev) {
  return KernelInterfaces{std::move(nldev), std::make_unique<testing::FakeDcb>(),
                          std::make_unique<testing::FakeEthtool>()};
}

void BM_CollectSysfsOnly(benchmark::State& state) {
  Config c;
  c.sysfs.root = sysfs_tree();
  c.collectors.set_enabled("devices", false);
  c.collectors.set_enabled("hw_counters", false);
  c.collectors.set_enabled("resources", false);
  Collection collection(c, fake_kernel(std::make_unique<testing::FakeNldev>()));
  for (auto _ : state) benchmark::DoNotOptimize(collection.collect());
}
BENCHMARK(BM_CollectSysfsOnly)->Unit(benchmark::kMicrosecond);

void BM_CollectSysfsAndNetlink(benchmark::State& state) {
  Config c;
  c.sysfs.root = sysfs_tree();
  Collection collection(c, fake_kernel(mlx5_kernel()));
  std::size_t bytes = 0;
  for (auto _ : state) bytes = collection.collect()->text.size();
  state.counters["exposition_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_CollectSysfsAndNetlink)->Unit(benchmark::kMicrosecond);

// The statistics of an mlx5 netdev with `channels` channels, named as the
// driver names them (Documentation/.../mlx5/counters.rst): software port and
// per-ring counters, vPort and physical port counters, 8 priorities.
testing::FakeNetdev mlx5_netdev(int channels) {
  static const char* kRing[] = {"packets",           "bytes",
                                "csum_complete",     "csum_unnecessary",
                                "csum_none",         "xdp_drop",
                                "lro_packets",       "lro_bytes",
                                "ecn_mark",          "removed_vlan_packets",
                                "wqe_err",           "mpwqe_filler_cqes",
                                "buff_alloc_err",    "cqe_compress_blks",
                                "cqe_compress_pkts", "congst_umr",
                                "arfs_err",          "recover",
                                "xdp_tx_xmit",       "xdp_tx_full"};
  static const char* kPort[] = {"rx_packets_phy",
                                "tx_packets_phy",
                                "rx_bytes_phy",
                                "tx_bytes_phy",
                                "rx_discards_phy",
                                "tx_discards_phy",
                                "rx_out_of_buffer",
                                "rx_pause_ctrl_phy",
                                "tx_pause_ctrl_phy",
                                "rx_crc_errors_phy",
                                "link_down_events_phy",
                                "rx_vport_rdma_unicast_packets",
                                "tx_vport_rdma_unicast_packets"};
  testing::FakeNetdev n{.driver = "mlx5_core"};
  uint64_t v = 1;
  for (const char* name : kPort) n.stats.emplace_back(name, v++);
  for (int c = 0; c < channels; ++c) {
    for (const char* name : kRing) {
      n.stats.emplace_back("rx" + std::to_string(c) + "_" + name, v++);
      n.stats.emplace_back("tx" + std::to_string(c) + "_" + name, v++);
    }
  }
  for (int p = 0; p < 8; ++p) {
    for (const char* name : {"bytes", "packets", "pause", "pause_duration", "pause_transition"}) {
      n.stats.emplace_back("rx_prio" + std::to_string(p) + "_" + name, v++);
      n.stats.emplace_back("tx_prio" + std::to_string(p) + "_" + name, v++);
    }
    for (const char* name : {"discards", "buf_discard", "cong_discard", "marked"}) {
      n.stats.emplace_back("rx_prio" + std::to_string(p) + "_" + name, v++);
    }
  }
  return n;
}

// Mapping one netdev's statistic names (63 channels: 2,645 statistics) with
// the built-in tables: what the ethtool collector does when a netdev's
// statistics are new or changed.
void BM_EthtoolResolveMlx5(benchmark::State& state) {
  const auto netdev = mlx5_netdev(63);
  std::vector<std::string> names;
  for (const auto& [name, value] : netdev.stats) names.push_back(name);
  const ethtool::StatMapper mapper({});
  for (auto _ : state) benchmark::DoNotOptimize(mapper.resolve("mlx5_core", names));
  state.counters["statistics"] = static_cast<double>(names.size());
}
BENCHMARK(BM_EthtoolResolveMlx5)->Unit(benchmark::kMicrosecond);

// The ethtool and DCB collectors on 16 ports (8 devices x 2 ports), each
// with its own mlx5 netdev of 63 channels and mlx5's DCB configuration: one
// collection once the statistic layouts are known (the steady state), with
// the fake SIOCETHTOOL and DCB encoding their answers in the loop.
void BM_CollectEthtoolAndDcb16Netdevs(benchmark::State& state) {
  auto ethtool = std::make_unique<testing::FakeEthtool>();
  auto dcb = std::make_unique<testing::FakeDcb>();
  auto nldev = mlx5_kernel();
  for (const auto& dev : nldev->devices) {
    for (const auto& port : dev.ports) {
      ethtool->netdevs[port.netdev] = mlx5_netdev(63);
      dcb->netdevs[port.netdev] = testing::mlx5_dcb();
    }
  }
  Config c;
  c.sysfs.root = "/nonexistent";
  for (const char* off :
       {"hw_counters", "resources", "sysfs", "qp_counters", "optional_counters"}) {
    c.collectors.set_enabled(off, false);
  }
  Collection collection(c, KernelInterfaces{std::move(nldev), std::move(dcb), std::move(ethtool)});
  collection.collect();
  std::size_t bytes = 0;
  for (auto _ : state) bytes = collection.collect()->text.size();
  state.counters["exposition_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_CollectEthtoolAndDcb16Netdevs)->Unit(benchmark::kMillisecond);

void BM_RenderAndGzip(benchmark::State& state) {
  Config c;
  c.sysfs.root = sysfs_tree();
  Collection collection(c, mlx5_kernel());
  const auto snap = collection.collect();
  for (auto _ : state) benchmark::DoNotOptimize(gzip_compress(render_text(snap->families)));
}
BENCHMARK(BM_RenderAndGzip)->Unit(benchmark::kMicrosecond);

// Answers as `inner` does, after `delay` per request: a module's two-wire
// bus, which takes up to about a second per module on real NICs.
class SlowTransport final : public netlink::Transport {
 public:
  SlowTransport(std::unique_ptr<netlink::Transport> inner, std::chrono::milliseconds delay)
      : inner_(std::move(inner)), delay_(delay) {}
  Result<netlink::Reply> exchange(std::span<const uint8_t> request) override {
    std::this_thread::sleep_for(delay_);
    return inner_->exchange(request);
  }

 private:
  std::unique_ptr<netlink::Transport> inner_;
  std::chrono::milliseconds delay_;
};

// One default collection (every collector) of `devices` devices with 2
// ports each, on the fake nldev kernel and a sysfs tree of the same shape,
// without or with the transceiver collector. With it, every port's netdev
// has a QSFP-DD module (8 lanes), each request to it taking `delay`; timing
// starts once every module was read, so a collection serves all of them
// from the cache while the reading thread goes on.
void BM_Transceiver(benchmark::State& state, uint32_t devices, bool with,
                    std::chrono::milliseconds delay) {
  Config c;
  c.sysfs.root = sysfs_tree("mlx5:" + std::to_string(devices) + ":2");
  c.collectors.set_enabled("transceiver", with);
  auto nldev = mlx5_kernel(devices);
  auto modules = std::make_unique<testing::FakeEthnl>();
  for (const auto& d : nldev->devices) {
    for (const auto& p : d.ports) modules->netdevs[p.netdev].module = testing::qsfp_dd_module();
  }
  KernelInterfaces kernel = fake_kernel(std::move(nldev));
  kernel.module_generic = std::make_unique<SlowTransport>(std::move(modules), delay);
  Collection collection(c, std::move(kernel));
  const std::size_t want = with ? devices * 2 : 0;
  for (;;) {
    const std::string text = collection.collect()->text;
    std::size_t read = 0;
    for (auto at = text.find("\nrdma_transceiver_info{"); at != std::string::npos;
         at = text.find("\nrdma_transceiver_info{", at + 1)) {
      ++read;
    }
    if (read >= want) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::size_t bytes = 0;
  for (auto _ : state) bytes = collection.collect()->text.size();
  state.counters["exposition_bytes"] = static_cast<double>(bytes);
}
BENCHMARK_CAPTURE(BM_Transceiver, ports16_without, 8, false, std::chrono::milliseconds(0))
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Transceiver, ports16_with, 8, true, std::chrono::milliseconds(0))
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Transceiver, ports128_without, 64, false, std::chrono::milliseconds(0))
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Transceiver, ports128_with, 64, true, std::chrono::milliseconds(0))
    ->Unit(benchmark::kMicrosecond);
// 20 ms a request, 100 ms a module: the reading thread is busy for 13 s of
// every 60, and collections do not wait for it.
BENCHMARK_CAPTURE(BM_Transceiver, ports128_with_slow_modules, 64, true,
                  std::chrono::milliseconds(20))
    ->Unit(benchmark::kMicrosecond);

// Answers every request the way a recorded kernel answered it, so that a
// benchmark measures the exporter alone, not the fake kernel's encoding.
class ReplayTransport final : public netlink::Transport {
 public:
  explicit ReplayTransport(std::unique_ptr<netlink::Transport> inner) : inner_(std::move(inner)) {}
  Result<netlink::Reply> exchange(std::span<const uint8_t> request) override {
    netlink::Bytes key(request.begin(), request.end());
    auto it = recorded_.find(key);
    if (it != recorded_.end()) return it->second;
    auto reply = inner_->exchange(request);
    if (reply) recorded_.emplace(std::move(key), *reply);
    return reply;
  }

 private:
  std::unique_ptr<netlink::Transport> inner_;
  std::map<netlink::Bytes, netlink::Reply> recorded_;
};

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// Pods of the pod-shaped /proc tree: process `pid` is in container
// (pid - 1000) % kContainers, two containers a pod.
constexpr uint32_t kContainers = 5000;

std::string pod_uid(uint32_t container) {
  char b[40];
  std::snprintf(b, sizeof b, "%08x-0000-4000-8000-%012x", container / 2, container / 2 + 1);
  return b;
}
std::string container_id(uint32_t container) {
  char b[65];
  std::snprintf(b, sizeof b, "%016x%016x%016x%016x", container, container + 1, container + 2,
                container + 3);
  return b;
}

// A /proc of `count` processes from pid 1000 on, each with a comm and a
// cgroup file, as the per-QP collector reads them; made once per run.
// `pods`: the cgroups are containerd's under the systemd driver, for the
// containers above; otherwise /kubepods/pod-N/ctr, no pod's.
const std::string& proc_tree(uint32_t count, bool pods = false) {
  static std::map<std::pair<uint32_t, bool>, std::string> made;
  auto [it, inserted] = made.try_emplace({count, pods});
  if (!inserted) return it->second;
  const std::filesystem::path dir = "/tmp/rdma_exporter_bench_proc_" + std::to_string(::getpid()) +
                                    "_" + std::to_string(count) + (pods ? "_pods" : "");
  std::filesystem::remove_all(dir);
  for (uint32_t pid = 1000; pid < 1000 + count; ++pid) {
    const auto p = dir / std::to_string(pid);
    std::filesystem::create_directories(p);
    std::ofstream(p / "comm") << "trainer_" << pid % 64 << "\n";
    if (pods) {
      const uint32_t c = (pid - 1000) % kContainers;
      std::string uid = pod_uid(c);
      for (char& ch : uid) ch = ch == '-' ? '_' : ch;
      std::ofstream(p / "cgroup")
          << "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" << uid
          << ".slice/cri-containerd-" << container_id(c) << ".scope\n";
    } else {
      std::ofstream(p / "cgroup") << "0::/kubepods/pod-" << pid % 256 << "/ctr\n";
    }
  }
  if (made.size() == 1) {
    std::atexit([] {
      for (const auto& [n, path] : made) std::filesystem::remove_all(path);
    });
  }
  it->second = dir;
  return it->second;
}

// The node's CRI in a process of its own (fake_node_api_server), so that the
// exporter's memory is measured without the server's.
class NodeApiProcess {
 public:
  NodeApiProcess(const std::string& socket, const std::string& state) {
    int out[2];
    if (::pipe(out) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    std::string bin = FAKE_NODE_API_SERVER;
    std::string none = "-";
    std::string sock = socket, file = state;
    char* argv[] = {bin.data(), sock.data(), none.data(), file.data(), nullptr};
    const int rc = posix_spawn(&pid_, bin.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    if (rc != 0) throw std::runtime_error("cannot run " + bin);
    std::string line;
    char c = 0;
    while (::read(out[0], &c, 1) == 1 && c != '\n') line += c;
    ::close(out[0]);
    if (line != "ready") throw std::runtime_error("fake_node_api_server did not start");
  }
  ~NodeApiProcess() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  NodeApiProcess(const NodeApiProcess&) = delete;
  NodeApiProcess& operator=(const NodeApiProcess&) = delete;

 private:
  pid_t pid_ = -1;
};

// `devices` devices of 2 ports, each port with `sets_per_port` per-QP
// counter sets of 5 QPs (auto mode by pid: one pid a set): one whole
// collection with per-QP counters, attribution (comm from a /proc tree in
// /tmp, one process a set) and the QP inventory. Peak
// RSS is the whole process, the fake kernel's model and reply bytes
// included. `pods`: the processes are in pod-shaped cgroups; 1 with the
// kubernetes section off, 2 with it on (a fake CRI listing every container,
// so each set gets its namespace, pod and container).
void run_qp_counters(benchmark::State& state, uint32_t devices, int sets_per_port, int pods = 0) {
  auto k = std::make_unique<testing::FakeNldev>();
  k->sets_per_message = 64;
  for (uint32_t d = 0; d < devices; ++d) {
    testing::FakeDevice dev{.index = d + 1, .name = "mlx5_" + std::to_string(d)};
    for (uint32_t p = 1; p <= 2; ++p) {
      dev.ports.push_back(testing::FakePort{
          .index = p, .counter_mode = RDMA_COUNTER_MODE_AUTO, .auto_mask = RDMA_COUNTER_MASK_PID});
    }
    k->devices.push_back(std::move(dev));
  }
  uint32_t pid = 1000;
  std::size_t qps = 0;
  for (uint32_t d = 1; d <= devices; ++d) {
    for (uint32_t p = 1; p <= 2; ++p) {
      for (int set = 0; set < sets_per_port; ++set, ++pid) {
        for (int q = 0; q < 5; ++q, ++qps) {
          const uint32_t qpn = k->create_qp(d, p, 2, pid);
          k->traffic(d, qpn, "rx_write_requests", pid);
        }
      }
    }
  }
  Config c;
  c.sysfs.root = "/nonexistent";
  c.collectors.set_enabled("sysfs", false);
  c.collectors.options<QpCountersOptions>().max_series = 5000;
  c.collectors.options<QpCountersOptions>().proc_root = proc_tree(pid - 1000, pods > 0);
  std::unique_ptr<NodeApiProcess> cri;
  if (pods == 2) {
    const std::string base = "/tmp/rdma_exporter_bench_cri_" + std::to_string(::getpid());
    {
      std::ofstream node(base + ".yml");
      node << "containers:\n";
      for (uint32_t i = 0; i < kContainers; ++i) {
        node << "  - {id: " << container_id(i) << ", pod_uid: " << pod_uid(i)
             << ", namespace: team-" << i % 40 << ", pod: job-" << i / 2 << ", container: worker-"
             << i % 2 << "}\n";
      }
      node << "pods: []\n";
    }
    cri = std::make_unique<NodeApiProcess>(base + ".sock", base + ".yml");
    c.kubernetes.enabled = true;
    c.kubernetes.cri_socket = base + ".sock";
    c.kubernetes.pod_resources_socket = "";
  }
  // The first collection records the fake kernel's answers; the timed ones
  // replay them, so the time is the exporter's: parsing, attribution,
  // series, rendering and gzip.
  Collection collection(c, KernelInterfaces{std::make_unique<ReplayTransport>(std::move(k)),
                                            std::make_unique<testing::FakeDcb>(),
                                            std::make_unique<testing::FakeEthtool>()});
  collection.collect();
  std::size_t bytes = 0;
  for (auto _ : state) bytes = collection.collect()->text.size();
  state.counters["qps"] = static_cast<double>(qps);
  state.counters["us_per_qp"] = benchmark::Counter(
      static_cast<double>(qps) * 1e-6,
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["exposition_bytes"] = static_cast<double>(bytes);
  state.counters["peak_rss_MiB"] = static_cast<double>(peak_rss_kib()) / 1024.0;
}

// 10,000 QPs in 2,000 sets on 4 ports (2 devices x 2 ports).
void BM_QpCounters10kQps2kSets(benchmark::State& state) {
  run_qp_counters(state, 2, 500);
}
BENCHMARK(BM_QpCounters10kQps2kSets)->Unit(benchmark::kMillisecond);

// 100,000 QPs in 20,000 sets on 8 ports (4 devices x 2 ports).
void BM_QpCounters100kQps20kSets(benchmark::State& state) {
  run_qp_counters(state, 4, 2500);
}
BENCHMARK(BM_QpCounters100kQps20kSets)->Unit(benchmark::kMillisecond);

// The same 20,000 sets of processes in 5,000 containers of 2,500 pods
// (containerd, systemd cgroup driver): without the kubernetes section, and
// with it (namespace, pod and container on every series).
void BM_QpCounters20kSetsPodCgroups(benchmark::State& state) {
  run_qp_counters(state, 4, 2500, 1);
}
BENCHMARK(BM_QpCounters20kSetsPodCgroups)->Unit(benchmark::kMillisecond);
void BM_QpCounters20kSetsPodLabels(benchmark::State& state) {
  run_qp_counters(state, 4, 2500, 2);
}
BENCHMARK(BM_QpCounters20kSetsPodLabels)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace rdma_exporter

BENCHMARK_MAIN();
