// fleet_hosts: a fleet of rail hosts as scrape targets on loopback, for
// loading a metrics pipeline (bench/fleet_load.py, docs/deployment.md) and
// for the sharded-layout test (tests/integration/test_sharded.py).
//
// Every host's exposition is the exporter's own: a collection of the fake
// rail host (tests/fake_kernel/live_host.hpp: `rnics` mlx5 RoCE ports,
// `processes` processes with a QP on each, 8 priorities, FEC, modules) with
// the probe's series of a fleet-mode host (tests/support/fleet_probe_host.hpp),
// rendered once at start. Host h is "host<h>:10911" in group g<h / group-size>;
// its ports probe the other hosts of its group and, each on its rail, `remote`
// hosts of other groups. Each host is served on a port of its own.
//
// Time passes by a model that a test can work by hand: from the start, at
// t seconds, a counter of host h reads its rendered value plus rate * t,
// where the rate is
//   1,000,000 * (N + 1) + 1,000 * h   for a counter in bytes (_bytes_total)
//                                     of device mlx5_N (N = 0 without one)
//   1,000 * (N + 1) + h               for a counter in packets
//                                     (_packets_total), but ECN-marked
//                                     packets (congestion)
//   10 per second        for the probe's sent counters (rdma_probe_*sent_total)
//   10 * rendered value  for a histogram's buckets, count and sum: ten
//                        observations per second of what was observed
//   0                    for every other counter (errors, pauses, losses)
// plus what --grow adds. A gauge of a time (_timestamp_seconds: the probe's
// last success per pair, a module's last read) reads the time of the scrape,
// as on a host whose probes keep answering; other gauges keep their
// rendered value.
//
// Usage: fleet_hosts --hosts N [--rnics R] [--processes P] [--group-size G]
//                    [--remote K] [--address ADDR] [--first-port PORT]
//                    [--idle-timeout SECONDS]
//                    [--grow HOST,METRIC,DEVICE,PER_SECOND]... [--targets FILE]
// --first-port 0 (the default) takes any free ports. A connection is closed
// after --idle-timeout (default 300) without a request, or with its answer
// not taken; a failed accept is retried a second later. --targets writes the
// hosts as a Prometheus file_sd list ({"targets": ["ADDR:PORT"], "labels":
// {}} per host, in host order). --grow adds PER_SECOND to the rate
// of host HOST's series of counter METRIC on device DEVICE ("*": any
// device, and series without one). Prints "ready <hosts> <series>" when
// every host listens; stops on SIGINT or SIGTERM.

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/qp_counters/options.hpp"
#include "exporter/collection.hpp"
#include "exporter/config.hpp"
#include "tests/fake_kernel/live_host.hpp"
#include "tests/support/fleet_probe_host.hpp"
#include "tests/support/sysfs_tree.hpp"

namespace rdma_exporter::bench {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct Growth {
  uint32_t host = 0;
  std::string metric;
  std::string device;  // "*": any
  double per_second = 0;
};

struct Options {
  uint32_t hosts = 0;
  uint32_t rnics = 8;
  uint32_t processes = 8;
  uint32_t group_size = 32;
  uint32_t remote = 4;
  std::string address = "127.0.0.1";
  uint32_t first_port = 0;
  uint32_t idle_timeout = 300;  // seconds
  std::vector<Growth> grow;
  std::string targets;
};

// One host's exposition: text that never changes, and after each piece of
// it, the value of a counter that grows (when `rate` is not 0) or the time
// (when `now`).
struct Piece {
  std::string text;
  double value = 0;
  double rate = 0;
  bool now = false;
};

struct Host {
  std::vector<Piece> pieces;
  std::size_t size = 0;    // of the text, for reserving
  std::size_t series = 0;  // samples
  // The exposition `seconds` after the start, at Unix time `now`.
  std::string body(double seconds, double now) const {
    std::string out;
    out.reserve(size + size / 8);
    char number[32];
    for (const auto& p : pieces) {
      out += p.text;
      if (p.rate == 0 && !p.now) continue;
      const double v = p.now ? now : p.value + p.rate * seconds;
      const auto [end, ec] = std::to_chars(number, number + sizeof number, v);
      out.append(number, end);
      out += '\n';
    }
    return out;
  }
};

std::string host_name(uint32_t h) {
  return "host" + std::to_string(h) + ":10911";
}
std::string group_name(uint32_t h, const Options& o) {
  return "g" + std::to_string(h / o.group_size);
}

// Who host h probes: the others of its group on every port, and on port i
// `remote` hosts of other groups, spread over the fleet.
testing::FleetProbeIdentity identity(uint32_t h, const Options& o) {
  testing::FleetProbeIdentity id;
  id.group = group_name(h, o);
  id.address = host_name(h);
  std::vector<std::string> all;
  const uint32_t first = h / o.group_size * o.group_size;
  std::vector<testing::FleetProbeIdentity::Target> group;
  for (uint32_t k = first; k < std::min(first + o.group_size, o.hosts); ++k) {
    if (k == h) continue;
    group.push_back({host_name(k), group_name(k, o)});
    all.push_back(host_name(k));
  }
  for (uint32_t i = 0; i < o.rnics; ++i) {
    auto targets = group;
    for (uint32_t k = 1;
         o.hosts > o.group_size && targets.size() < group.size() + o.remote && k <= o.hosts; ++k) {
      const uint32_t t = (h + k * o.group_size + i) % o.hosts;
      if (t / o.group_size == h / o.group_size) continue;
      targets.push_back({host_name(t), group_name(t, o)});
      if (std::find(all.begin(), all.end(), host_name(t)) == all.end()) all.push_back(host_name(t));
    }
    id.port_targets.push_back(std::move(targets));
  }
  id.target_hosts = std::move(all);
  return id;
}

// The N of label device="mlx5_N" in a series' labels, or 0.
double device_factor(std::string_view labels) {
  const auto at = labels.find("device=\"mlx5_");
  if (at == std::string_view::npos) return 1;
  unsigned n = 0;
  const char* begin = labels.data() + at + 13;
  std::from_chars(begin, labels.data() + labels.size(), n);
  return n + 1.0;
}

bool on_device(std::string_view labels, const std::string& device) {
  if (device == "*") return true;
  return labels.find("device=\"" + device + "\"") != std::string_view::npos;
}

// The rate of one sample line of family `family` (its # TYPE).
double rate_of(uint32_t h, std::string_view name, std::string_view labels, std::string_view type,
               double value) {
  if (type == "histogram") return 10 * value;
  if (type != "counter") return 0;
  if (name.find("marked") != std::string_view::npos) return 0;  // ECN: congestion
  if (name.ends_with("_bytes_total")) return 1e6 * device_factor(labels) + 1e3 * h;
  if (name.ends_with("_packets_total")) return 1e3 * device_factor(labels) + h;
  if (name.starts_with("rdma_probe_") && name.ends_with("sent_total")) return 10;
  return 0;
}

Host split(const std::string& text, uint32_t h, const Options& o) {
  Host host;
  std::string type;
  Piece piece;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    if (line.starts_with("# TYPE ")) {
      type = std::string(line.substr(line.rfind(' ') + 1));
    }
    if (line.empty() || line.front() == '#') {
      piece.text.append(line).append("\n");
      continue;
    }
    ++host.series;
    const auto space = line.rfind(' ');
    const auto brace = line.find('{');
    const std::string_view name = line.substr(0, std::min(brace, space));
    const std::string_view labels = brace < space ? line.substr(brace, space - brace) : "";
    double value = 0;
    std::from_chars(line.data() + space + 1, line.data() + line.size(), value);
    double rate = rate_of(h, name, labels, type, value);
    for (const auto& g : o.grow) {
      if (g.host == h && name == g.metric && on_device(labels, g.device)) rate += g.per_second;
    }
    const bool now = type == "gauge" && name.ends_with("_timestamp_seconds");
    if (rate == 0 && !now) {
      piece.text.append(line).append("\n");
      continue;
    }
    piece.text.append(line.substr(0, space + 1));
    piece.value = value;
    piece.rate = rate;
    piece.now = now;
    host.size += piece.text.size() + 24;
    host.pieces.push_back(std::move(piece));
    piece = Piece{};
  }
  host.size += piece.text.size();
  host.pieces.push_back(std::move(piece));
  return host;
}

// Renders host h: a collection of the fake rail host with its probe.
Host render(uint32_t h, const Options& o, const std::filesystem::path& sysfs,
            const std::filesystem::path& proc) {
  Config config;
  config.sysfs.root = sysfs.string();
  config.collectors.options<QpCountersOptions>().proc_root = proc.string();
  config.collection.once = true;
  Collection collection(config, testing::rail_host_kernel(o.rnics, o.processes));
  auto stats = std::make_shared<probe::ProbeStats>();
  const auto id = identity(h, o);
  std::vector<testing::FleetProbePort> ports;
  for (const auto& targets : id.port_targets) {
    const auto own = static_cast<std::size_t>(std::count_if(
        targets.begin(), targets.end(), [&id](const auto& t) { return t.group == id.group; }));
    ports.push_back({targets.size(), own > 0, targets.size() > own});
  }
  testing::fill_fleet_probe_stats(*stats, ports, id.target_hosts.size(), id);
  collection.add_self_metrics([stats](MetricSink& sink) { stats->add_metrics(sink); });
  collection.maintain();
  return split(collection.collect()->text, h, o);
}

// Answers every request on a connection with its host's exposition, now.
// A connection waits up to `idle` for its next request (a scraper keeps its
// connection between scrapes) and for its answer to be taken, then closes.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const Host& host, std::chrono::steady_clock::time_point start,
          std::chrono::seconds idle)
      : stream_(std::move(socket)), host_(host), start_(start), idle_(idle) {}
  void read() {
    request_ = {};
    stream_.expires_after(idle_);
    http::async_read(stream_, buffer_, request_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (!ec) self->answer();
                     });
  }

 private:
  void answer() {
    const std::chrono::duration<double> since = std::chrono::steady_clock::now() - start_;
    const std::chrono::duration<double> unix_now =
        std::chrono::system_clock::now().time_since_epoch();
    response_ = {};
    response_.version(request_.version());
    response_.result(http::status::ok);
    response_.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    response_.body() = host_.body(since.count(), unix_now.count());
    response_.keep_alive(request_.keep_alive());
    response_.prepare_payload();
    stream_.expires_after(idle_);
    http::async_write(stream_, response_,
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (!ec && self->request_.keep_alive()) self->read();
                      });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::empty_body> request_;
  http::response<http::string_body> response_;
  const Host& host_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::seconds idle_;
};

// Accepts connections until the acceptor closes. A failed accept (out of
// file descriptors, say) is retried a second later instead of leaving the
// host deaf for the rest of the run.
void accept(tcp::acceptor& acceptor, const Host& host, std::chrono::steady_clock::time_point start,
            std::chrono::seconds idle) {
  acceptor.async_accept([&acceptor, &host, start, idle](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) {
      auto timer =
          std::make_shared<asio::steady_timer>(acceptor.get_executor(), std::chrono::seconds(1));
      timer->async_wait([timer, &acceptor, &host, start, idle](beast::error_code) {
        accept(acceptor, host, start, idle);
      });
      return;
    }
    std::make_shared<Session>(std::move(socket), host, start, idle)->read();
    accept(acceptor, host, start, idle);
  });
}

bool parse_count(std::string_view text, uint32_t& out, uint32_t max) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out <= max;
}

std::optional<Growth> parse_growth(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t pos = 0;
  for (std::size_t comma; (comma = text.find(',', pos)) != std::string::npos; pos = comma + 1) {
    parts.push_back(text.substr(pos, comma - pos));
  }
  parts.push_back(text.substr(pos));
  Growth g;
  if (parts.size() != 4 || !parse_count(parts[0], g.host, 1u << 20)) return std::nullopt;
  g.metric = parts[1];
  g.device = parts[2];
  const auto [end, ec] =
      std::from_chars(parts[3].data(), parts[3].data() + parts[3].size(), g.per_second);
  if (ec != std::errc() || end != parts[3].data() + parts[3].size()) return std::nullopt;
  return g;
}

int usage(const char* message) {
  std::fprintf(
      stderr,
      "fleet_hosts: %s\nUsage: fleet_hosts --hosts N [--rnics R] [--processes P] "
      "[--group-size G] [--remote K] [--address ADDR] [--first-port PORT] "
      "[--idle-timeout SECONDS] [--grow HOST,METRIC,DEVICE,PER_SECOND]... [--targets FILE]\n",
      message);
  return 2;
}

int run(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (i + 1 >= argc) return usage("every option needs a value");
    const std::string value = argv[++i];
    bool ok = true;
    if (arg == "--hosts") {
      ok = parse_count(value, o.hosts, 100000) && o.hosts > 0;
    } else if (arg == "--rnics") {
      ok = parse_count(value, o.rnics, 64) && o.rnics > 0;
    } else if (arg == "--processes") {
      ok = parse_count(value, o.processes, 4096);
    } else if (arg == "--group-size") {
      ok = parse_count(value, o.group_size, 100000) && o.group_size > 0;
    } else if (arg == "--remote") {
      ok = parse_count(value, o.remote, 1024);
    } else if (arg == "--address") {
      o.address = value;
    } else if (arg == "--first-port") {
      ok = parse_count(value, o.first_port, 65535);
    } else if (arg == "--idle-timeout") {
      ok = parse_count(value, o.idle_timeout, 86400) && o.idle_timeout > 0;
    } else if (arg == "--grow") {
      auto g = parse_growth(value);
      ok = g.has_value();
      if (ok) o.grow.push_back(*g);
    } else if (arg == "--targets") {
      o.targets = value;
    } else {
      return usage("unknown option");
    }
    if (!ok) return usage(("bad value for " + std::string(arg)).c_str());
  }
  if (o.hosts == 0) return usage("--hosts is required");
  if (o.first_port != 0 && o.first_port + o.hosts > 65536)
    return usage("too many hosts for the ports");

  // The hosts' sysfs and proc: every host has the same devices and processes.
  const auto dir =
      std::filesystem::temp_directory_path() / ("fleet_hosts." + std::to_string(::getpid()));
  const auto sysfs = dir / "sys";
  const auto proc = dir / "proc";
  testing::write_sysfs_tree(sysfs, "mlx5:" + std::to_string(o.rnics) + ":1");
  for (uint32_t p = 0; p < o.processes; ++p) {
    const auto d = proc / std::to_string(1000 + p);
    std::filesystem::create_directories(d);
    std::ofstream(d / "comm") << "rank" << p << "\n";
    std::ofstream(d / "cgroup") << "0::/kubepods.slice/pod-" << p << "/ctr\n";
  }
  std::vector<Host> hosts;
  std::size_t series = 0;
  for (uint32_t h = 0; h < o.hosts; ++h) {
    hosts.push_back(render(h, o, sysfs, proc));
    series += hosts.back().series;
  }
  std::filesystem::remove_all(dir);

  asio::io_context io;
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
  std::string targets = "[\n";
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t h = 0; h < o.hosts; ++h) {
    const auto port = static_cast<uint16_t>(o.first_port == 0 ? 0 : o.first_port + h);
    beast::error_code ec;
    auto acceptor = std::make_unique<tcp::acceptor>(io);
    const tcp::endpoint ep(asio::ip::make_address(o.address, ec), port);
    if (!ec) acceptor->open(ep.protocol(), ec);
    if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor->bind(ep, ec);
    if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      std::fprintf(stderr, "fleet_hosts: listening on %s:%u: %s\n", o.address.c_str(), port,
                   ec.message().c_str());
      return 1;
    }
    targets += std::string(h ? ",\n" : "") + "  {\"targets\": [\"" + o.address + ":" +
               std::to_string(acceptor->local_endpoint().port()) + "\"], \"labels\": {}}";
    accept(*acceptor, hosts[h], start, std::chrono::seconds(o.idle_timeout));
    acceptors.push_back(std::move(acceptor));
  }
  targets += "\n]\n";
  if (!o.targets.empty()) {
    const auto tmp = o.targets + ".tmp";
    std::ofstream(tmp) << targets;
    std::filesystem::rename(tmp, o.targets);
  }
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&io](const beast::error_code&, int) { io.stop(); });
  std::printf("ready %u %zu\n", o.hosts, series);
  std::fflush(stdout);
  io.run();
  return 0;
}

}  // namespace
}  // namespace rdma_exporter::bench

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return rdma_exporter::bench::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fleet_hosts: %s\n", e.what());
    return 1;
  }
}
