// A fleet's probes under injected faults, simulated second by second: the
// timeline that bench/fleet_faults backfills into Prometheus to evaluate the
// culprit rules against. Every host computes its pinglist with the probe's
// own compute_pinglist, epoch after epoch; every probe of every pair of RNICs
// crosses the fabric elements of its path (RNIC, leaf, the leaf's link to a
// spine picked by the flow label, the far leaf, the far RNIC) and is lost
// with the faults active on them; hosts that stall delay their probes and
// replies, which count as the exporter counts them (invalid when it notices
// the stall in time); each target's responder counts the requests that
// reach it and those its probers' sequence numbers say were sent, by the
// probers' scope, as its UD port does; the series are the probe's own
// ProbeStats, rendered at every scrape.
//
//   build/bench/fleet_faults_sim SCENARIO.yml OUT_DIR --start UNIX_SECONDS
//
// Writes OUT_DIR/series.om (OpenMetrics with timestamps: the metrics the
// culprit rules read, with the job and instance labels a scrape adds) and
// OUT_DIR/truth.json (the faults, as the elements a culprit names, with their
// start and end in Unix seconds). The scenario format: docs/fabric.md,
// "Simulating faults".

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/metric_sink.hpp"
#include "exporter/formats/prometheus_values.hpp"
#include "exporter/probe/plan/pinglist.hpp"
#include "exporter/probe/plan/probers.hpp"
#include "exporter/probe/stats/stats.hpp"

namespace rdma_exporter::probe {
namespace {

constexpr double kForever = std::numeric_limits<double>::infinity();

// "40m", "500ms", "30s", "2h", "1.5s" or a number of seconds.
double seconds_of(const YAML::Node& n, const std::string& what) {
  const std::string s = n.as<std::string>();
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    throw std::runtime_error(what + ": not a duration: " + s);
  }
  const std::string unit = s.substr(used);
  if (unit.empty() || unit == "s") return v;
  if (unit == "ms") return v / 1000;
  if (unit == "m") return v * 60;
  if (unit == "h") return v * 3600;
  throw std::runtime_error(what + ": unknown unit in " + s + " (ms, s, m, h)");
}

struct Shape {
  std::size_t hosts = 64;
  std::size_t group_size = 32;
  std::size_t rails = 4;
  std::size_t spines = 8;
};

struct ProbeSettings {
  double interval = 1;  // seconds between probes of a pair (the simulation's tick)
  double timeout = 1;
  uint8_t flows = 4;
  std::size_t remote_per_rail = 4;
  double epoch = 60;
  double scrape_interval = 15;
};

struct Fault {
  std::string kind;  // rnic, leaf, uplink, path, host_down, host_stall
  long host = -1, group = -1, to_group = -1, rail = -1, spine = -1;
  double loss = 1;
  bool request = true, reply = true;
  double start = 0, end = kForever;
  // host_stall
  std::vector<std::size_t> stall_hosts;
  double stall = 0, every = 0;
};

struct Scenario {
  Shape shape;
  ProbeSettings probe;
  double duration = 600;
  uint64_t seed = 1;
  double background_loss = 0;
  std::vector<Fault> faults;
};

long index_of(const YAML::Node& f, const char* key, std::size_t limit, const std::string& what) {
  if (!f[key]) return -1;
  const long v = f[key].as<long>();
  if (v < 0 || static_cast<std::size_t>(v) >= limit) {
    throw std::runtime_error(what + "." + key + ": " + std::to_string(v) + " is not in 0.." +
                             std::to_string(limit - 1));
  }
  return v;
}

Scenario read_scenario(const std::string& path) {
  const YAML::Node root = YAML::LoadFile(path);
  Scenario s;
  if (const YAML::Node f = root["fleet"]) {
    if (f["hosts"]) s.shape.hosts = f["hosts"].as<std::size_t>();
    if (f["group_size"]) s.shape.group_size = f["group_size"].as<std::size_t>();
    if (f["rails"]) s.shape.rails = f["rails"].as<std::size_t>();
    if (f["spines"]) s.shape.spines = f["spines"].as<std::size_t>();
  }
  if (s.shape.hosts < 2 || s.shape.group_size < 1 || s.shape.rails < 1 || s.shape.rails > 64 ||
      s.shape.spines < 1) {
    throw std::runtime_error("fleet: needs hosts >= 2, group_size >= 1, 1..64 rails, spines >= 1");
  }
  if (const YAML::Node p = root["probe"]) {
    if (p["interval"]) s.probe.interval = seconds_of(p["interval"], "probe.interval");
    if (p["timeout"]) s.probe.timeout = seconds_of(p["timeout"], "probe.timeout");
    if (p["flows"]) s.probe.flows = static_cast<uint8_t>(p["flows"].as<unsigned>());
    if (p["remote_per_rail"]) s.probe.remote_per_rail = p["remote_per_rail"].as<std::size_t>();
    if (p["epoch"]) s.probe.epoch = seconds_of(p["epoch"], "probe.epoch");
  }
  if (root["scrape_interval"]) {
    s.probe.scrape_interval = seconds_of(root["scrape_interval"], "scrape_interval");
  }
  if (s.probe.interval <= 0 || s.probe.flows < 1 || s.probe.flows > 16 || s.probe.epoch <= 0 ||
      s.probe.scrape_interval < s.probe.interval) {
    throw std::runtime_error("probe: interval > 0, 1..16 flows, epoch > 0, scrape >= interval");
  }
  if (root["duration"]) s.duration = seconds_of(root["duration"], "duration");
  if (root["seed"]) s.seed = root["seed"].as<uint64_t>();
  if (root["background_loss"]) s.background_loss = root["background_loss"].as<double>();
  const std::size_t groups = (s.shape.hosts + s.shape.group_size - 1) / s.shape.group_size;
  std::mt19937_64 rng(s.seed ^ 0x5eed);
  std::size_t i = 0;
  for (const YAML::Node& f : root["faults"]) {
    const std::string what = "faults[" + std::to_string(i++) + "]";
    Fault x;
    x.kind = f["kind"].as<std::string>();
    static const std::set<std::string> kinds = {"rnic", "leaf",      "uplink",
                                                "path", "host_down", "host_stall"};
    if (!kinds.contains(x.kind)) throw std::runtime_error(what + ".kind: unknown: " + x.kind);
    x.host = index_of(f, "host", s.shape.hosts, what);
    x.group = index_of(f, "group", groups, what);
    x.to_group = index_of(f, "to_group", groups, what);
    x.rail = index_of(f, "rail", s.shape.rails, what);
    x.spine = index_of(f, "spine", s.shape.spines, what);
    if (f["loss"]) x.loss = f["loss"].as<double>();
    if (x.loss < 0 || x.loss > 1) throw std::runtime_error(what + ".loss: not in 0..1");
    if (f["direction"]) {
      const std::string d = f["direction"].as<std::string>();
      if (d == "request") {
        x.reply = false;
      } else if (d == "reply") {
        x.request = false;
      } else if (d != "both") {
        throw std::runtime_error(what + ".direction: request, reply or both");
      }
    }
    if (f["start"]) x.start = seconds_of(f["start"], what + ".start");
    if (f["end"]) x.end = seconds_of(f["end"], what + ".end");
    const auto need = [&](bool ok, const char* keys) {
      if (!ok) throw std::runtime_error(what + ": kind " + x.kind + " needs " + keys);
    };
    if (x.kind == "rnic") need(x.host >= 0 && x.rail >= 0, "host and rail");
    if (x.kind == "leaf") need(x.group >= 0 && x.rail >= 0, "group and rail");
    if (x.kind == "uplink") need(x.group >= 0 && x.rail >= 0 && x.spine >= 0, "group, rail, spine");
    if (x.kind == "path") {
      need(x.group >= 0 && x.to_group >= 0 && x.rail >= 0 && x.spine >= 0 && x.group != x.to_group,
           "group, to_group (another), rail, spine");
    }
    if (x.kind == "host_down") need(x.host >= 0, "host");
    if (x.kind == "host_stall") {
      need(f["stall"] && f["every"] && f["hosts"], "hosts, stall and every");
      x.stall = seconds_of(f["stall"], what + ".stall");
      x.every = seconds_of(f["every"], what + ".every");
      if (x.every <= 0 || x.stall < 0) {
        throw std::runtime_error(what + ": every must be positive, stall not negative");
      }
      if (f["hosts"].IsSequence()) {
        for (const YAML::Node& h : f["hosts"]) x.stall_hosts.push_back(h.as<std::size_t>());
      } else {
        const double share = f["hosts"].as<double>();
        for (std::size_t h = 0; h < s.shape.hosts; ++h) {
          if (std::uniform_real_distribution<double>(0, 1)(rng) < share) x.stall_hosts.push_back(h);
        }
      }
    }
    s.faults.push_back(std::move(x));
  }
  return s;
}

std::string host_name(std::size_t h) {
  char b[32];
  std::snprintf(b, sizeof b, "h%04zu", h);
  return b;
}
std::string group_name(std::size_t g) {
  char b[32];
  std::snprintf(b, sizeof b, "g%03zu", g);
  return b;
}
std::string rail_name(std::size_t r) {
  return "rail" + std::to_string(r);
}
std::string device_name(std::size_t r) {
  return "mlx5_" + std::to_string(r);
}
std::string address_of(std::size_t h) {
  return host_name(h) + ":10911";
}
std::string instance_of(std::size_t h) {
  return host_name(h) + ":10910";
}

// One leg of a probe: the request (prober to responder) or the reply.
struct Leg {
  std::size_t from, to;  // hosts
  std::size_t from_group, to_group;
  std::size_t rail;
  std::size_t spine;  // between groups: the spine the flow hashes to
  bool request;
};

bool crosses(const Fault& f, const Leg& leg) {
  if (!(leg.request ? f.request : f.reply)) return false;
  if (f.rail >= 0 && static_cast<std::size_t>(f.rail) != leg.rail) return false;
  const bool between_groups = leg.from_group != leg.to_group;
  const auto in = [](long want, std::size_t a, std::size_t b) {
    return static_cast<std::size_t>(want) == a || static_cast<std::size_t>(want) == b;
  };
  if (f.kind == "rnic") return in(f.host, leg.from, leg.to);
  if (f.kind == "leaf") return in(f.group, leg.from_group, leg.to_group);
  if (f.kind == "uplink") {
    return between_groups && static_cast<std::size_t>(f.spine) == leg.spine &&
           in(f.group, leg.from_group, leg.to_group);
  }
  if (f.kind == "path") {
    return between_groups && static_cast<std::size_t>(f.spine) == leg.spine &&
           static_cast<std::size_t>(f.group) == leg.from_group &&
           static_cast<std::size_t>(f.to_group) == leg.to_group;
  }
  return false;
}

struct Pair {
  std::shared_ptr<SeriesStats> series;
  std::size_t target;
  std::size_t rail;
  uint64_t seq = 0;
  // The highest sequence number the target's responder received of it.
  uint64_t highest = 0;
  // By flow label: the spine the request and the reply hash to.
  std::array<uint16_t, 16> request_spine{}, reply_spine{};
};

struct Host {
  std::unique_ptr<ProbeStats> stats;
  std::vector<Pair> pairs;
  // Its responder's account of each rail's port (UdPortStats, as the UD
  // port keeps it), while the host is up.
  std::vector<std::shared_ptr<UdPortStats>> responders;
  // [from, to), sorted, apart (stalls that overlap are merged), within the run
  std::vector<std::pair<double, double>> stalls;
  std::vector<std::pair<double, double>> downs;  // [from, to) the host is down
};

// The metric families the culprit rules read, as OpenMetrics families.
const std::map<std::string, std::pair<std::string, std::string>>& families() {
  static const std::map<std::string, std::pair<std::string, std::string>> f = {
      {"rdma_probe_sent_total", {"rdma_probe_sent", "counter"}},
      {"rdma_probe_timeouts_total", {"rdma_probe_timeouts", "counter"}},
      {"rdma_probe_path_timeouts_total", {"rdma_probe_path_timeouts", "counter"}},
      {"rdma_probe_invalid_total", {"rdma_probe_invalid", "counter"}},
      {"rdma_probe_stall_seconds_total", {"rdma_probe_stall_seconds", "counter"}},
      {"rdma_probe_stall_duration_seconds", {"rdma_probe_stall_duration_seconds", "histogram"}},
      {"rdma_probe_pinglist_info", {"rdma_probe_pinglist_info", "gauge"}},
      {"rdma_probe_scope_sent_total", {"rdma_probe_scope_sent", "counter"}},
      {"rdma_probe_scope_timeouts_total", {"rdma_probe_scope_timeouts", "counter"}},
      {"rdma_probe_scope_peers", {"rdma_probe_scope_peers", "gauge"}},
      {"rdma_probe_scope_peers_failing", {"rdma_probe_scope_peers_failing", "gauge"}},
      {"rdma_probe_ud_peers", {"rdma_probe_ud_peers", "gauge"}},
      {"rdma_probe_ud_requests_expected_total", {"rdma_probe_ud_requests_expected", "counter"}},
      {"rdma_probe_ud_requests_received_total", {"rdma_probe_ud_requests_received", "counter"}},
      {"rdma_probe_port_rail_info", {"rdma_probe_port_rail_info", "gauge"}},
  };
  return f;
}

class Simulation {
 public:
  Simulation(Scenario s, double start_unix) : s_(std::move(s)), start_(start_unix) {
    const std::size_t n = s_.shape.hosts;
    group_of_.resize(n);
    for (std::size_t h = 0; h < n; ++h) {
      group_of_[h] = h / s_.shape.group_size;
      members_.push_back({address_of(h), group_name(group_of_[h])});
    }
    for (std::size_t r = 0; r < s_.shape.rails; ++r) rails_.push_back(rail_name(r));
    hosts_.resize(n);
    for (const Fault& f : s_.faults) {
      if (f.kind != "host_stall") continue;
      for (std::size_t h : f.stall_hosts) {
        if (h >= n) continue;
        const double phase = std::uniform_real_distribution<double>(0, f.every)(rng_);
        const double until = std::min(f.end, s_.duration);
        for (uint64_t k = 0;; ++k) {
          const double t = f.start + phase + static_cast<double>(k) * f.every;
          if (t >= until) break;
          hosts_[h].stalls.emplace_back(t, t + f.stall);
        }
      }
    }
    for (Host& h : hosts_) {
      std::sort(h.stalls.begin(), h.stalls.end());
      std::vector<std::pair<double, double>> merged;
      for (const auto& st : h.stalls) {
        if (!merged.empty() && st.first <= merged.back().second) {
          merged.back().second = std::max(merged.back().second, st.second);
        } else {
          merged.push_back(st);
        }
      }
      h.stalls = std::move(merged);
    }
    for (const Fault& f : s_.faults) {
      if (f.kind == "host_down" && static_cast<std::size_t>(f.host) < n) {
        hosts_[static_cast<std::size_t>(f.host)].downs.emplace_back(f.start, f.end);
      }
    }
  }

  void run(const std::string& out_dir) {
    std::map<std::string, std::ofstream> out;
    for (const auto& [name, family] : families()) {
      out[name].open(out_dir + "/" + name + ".part");
    }
    const auto ticks = static_cast<uint64_t>(s_.duration / s_.probe.interval);
    const auto scrape_every =
        static_cast<uint64_t>(std::llround(s_.probe.scrape_interval / s_.probe.interval));
    uint64_t epoch = std::numeric_limits<uint64_t>::max();
    for (uint64_t tick = 0; tick <= ticks; ++tick) {
      const double t = static_cast<double>(tick) * s_.probe.interval;
      const auto e = static_cast<uint64_t>((start_ + t) / s_.probe.epoch);
      bool planned = false;
      for (std::size_t h = 0; h < hosts_.size(); ++h) {
        const bool up = !down(h, t);
        if (!up) {
          planned = planned || hosts_[h].stats != nullptr;
          hosts_[h].stats.reset();  // the host and its exporter are off
          hosts_[h].pairs.clear();
          hosts_[h].responders.clear();
        } else if (!hosts_[h].stats) {
          start_exporter(h);
          if (tick > 0) forget_sessions_to(h);
          plan(h, e);
          planned = true;
        } else if (e != epoch) {
          plan(h, e);
          planned = true;
        }
      }
      if (planned) count_probers();
      epoch = e;
      for (std::size_t h = 0; h < hosts_.size(); ++h) probe(h, t);
      if (tick % scrape_every == 0) scrape(t, out);
    }
    for (auto& [name, stream] : out) stream.close();
    std::ofstream om(out_dir + "/series.om");
    for (const auto& [name, family] : families()) {
      om << "# TYPE " << family.first << " " << family.second << "\n";
      std::ifstream part(out_dir + "/" + name + ".part");
      // An empty part (a family nothing exported) would fail the stream.
      if (part.peek() != std::ifstream::traits_type::eof()) om << part.rdbuf();
      part.close();
      std::remove((out_dir + "/" + name + ".part").c_str());
    }
    om << "# EOF\n";
    write_truth(out_dir + "/truth.json");
  }

 private:
  bool down(std::size_t h, double t) const {
    return std::any_of(hosts_[h].downs.begin(), hosts_[h].downs.end(),
                       [t](const auto& d) { return t >= d.first && t < d.second; });
  }

  // The stalls of host h from the first that ends at or after t: the
  // stalls are apart, so their ends are sorted as their starts are.
  std::vector<std::pair<double, double>>::const_iterator stalls_ending_from(std::size_t h,
                                                                            double t) const {
    const auto& stalls = hosts_[h].stalls;
    return std::lower_bound(stalls.begin(), stalls.end(), t,
                            [](const auto& st, double x) { return st.second < x; });
  }
  // The stall of host h that covers time t, [from, to); none: {0, 0}.
  std::pair<double, double> stall_at(std::size_t h, double t) const {
    auto it = stalls_ending_from(h, t);
    if (it != hosts_[h].stalls.end() && it->second == t) ++it;  // [from, to): t == to is out
    if (it != hosts_[h].stalls.end() && it->first <= t) return *it;
    return {0, 0};
  }
  // Whether a stall of host h that its exporter notices overlaps [from, to].
  bool noticed_stall_between(std::size_t h, double from, double to) const {
    for (auto it = stalls_ending_from(h, from); it != hosts_[h].stalls.end(); ++it) {
      if (it->first > to) break;
      if (noticed(it->second - it->first)) return true;
    }
    return false;
  }
  // A stall the exporter notices: its heartbeat (every 100 ms) runs at least
  // 200 ms late, whatever the stall's phase against it.
  static bool noticed(double stall) {
    return stall - std::chrono::duration<double>(kHeartbeat).count() >=
           std::chrono::duration<double>(kStallThreshold).count();
  }

  // A host's exporter starts: its ports, and its responder on each.
  void start_exporter(std::size_t h) {
    Host& host = hosts_[h];
    host.stats = std::make_unique<ProbeStats>();
    std::vector<PortReport> ports;
    for (std::size_t r = 0; r < s_.shape.rails; ++r) {
      ports.push_back({device_name(r), 1, port_state::probing, rail_names(r)});
      host.responders.push_back(host.stats->ud_port({{"device", device_name(r)}, {"port", "1"}}));
    }
    host.stats->set_local({}, std::move(ports), "");
  }

  // A responder that starts again knows no session: each prober's next
  // request that reaches it counts itself.
  void forget_sessions_to(std::size_t h) {
    for (Host& other : hosts_) {
      for (Pair& p : other.pairs) {
        if (p.target == h) p.highest = 0;
      }
    }
  }

  static ProberScope scope_between(std::size_t prober_group, std::size_t target_group) {
    return prober_group == target_group ? ProberScope::group : ProberScope::remote;
  }

  // Every responder's admitted probers by scope: one per pair that probes it
  // (one class).
  void count_probers() {
    std::vector<std::array<std::size_t, 2>> counts(hosts_.size() * s_.shape.rails);
    for (std::size_t h = 0; h < hosts_.size(); ++h) {
      for (const Pair& p : hosts_[h].pairs) {
        const auto scope = scope_between(group_of_[h], group_of_[p.target]);
        ++counts[p.target * s_.shape.rails + p.rail][static_cast<std::size_t>(scope)];
      }
    }
    for (std::size_t h = 0; h < hosts_.size(); ++h) {
      for (std::size_t r = 0; r < hosts_[h].responders.size(); ++r) {
        const auto& c = counts[h * s_.shape.rails + r];
        hosts_[h].responders[r]->set_peers(c[0], c[1]);
      }
    }
  }

  // A request of pair p from host h reached its target's responder: counted
  // as the UD port counts it (UdSequences: the first of a session counts
  // itself, each later one the numbers since the highest received).
  void arrived(std::size_t h, Pair& p) {
    const Host& target = hosts_[p.target];
    if (p.rail >= target.responders.size()) return;
    const uint64_t expected = p.highest == 0 ? 1 : p.seq - p.highest;
    p.highest = p.seq;
    target.responders[p.rail]->request(scope_between(group_of_[h], group_of_[p.target]), expected);
  }

  void plan(std::size_t h, uint64_t epoch) {
    const Pinglist list = compute_pinglist(members_, address_of(h), "", rails_,
                                           PinglistSettings{s_.probe.remote_per_rail, epoch});
    Host& host = hosts_[h];
    ProbeClass cls;
    cls.name = "default";
    cls.op = Op::ud;
    cls.size = 64;
    std::vector<Pair> pairs;
    std::vector<std::shared_ptr<SeriesStats>> keep;
    std::vector<std::shared_ptr<ScopeStats>> keep_scopes;
    const auto add = [&](std::size_t target, std::size_t r) {
      const RailPort local{device_name(r), 1, rail_names(r)};
      wire::PortAd remote;
      remote.device = device_name(r);
      remote.rail = rail_names(r);
      const Labels labels = series_labels(address_of(target), local, remote, cls,
                                          {{"rack", group_name(group_of_[target])}});
      Pair p{host.stats->series(labels, SeriesShape{false, false}), target, r};
      auto scope = host.stats->scope(
          scope_labels(local, cls, group_of_[target] == group_of_[h] ? "group" : "remote"));
      p.series->set_scope(scope);
      keep_scopes.push_back(std::move(scope));
      for (uint8_t flow = 0; flow < s_.probe.flows; ++flow) {
        p.request_spine[flow] = spine_of(h, target, r, flow);
        p.reply_spine[flow] = spine_of(target, h, r, flow);
      }
      // A pair kept from the last epoch keeps its place in the flow cycle.
      for (const Pair& old : host.pairs) {
        if (old.series == p.series) {
          p.seq = old.seq;
          p.highest = old.highest;
        }
      }
      keep.push_back(p.series);
      pairs.push_back(std::move(p));
    };
    for (std::size_t i : list.group) {
      for (std::size_t r = 0; r < s_.shape.rails; ++r) add(i, r);
    }
    for (const auto& [rail, targets] : list.remote) {
      const std::size_t r =
          static_cast<std::size_t>(std::find(rails_.begin(), rails_.end(), rail) - rails_.begin());
      for (std::size_t i : targets) add(i, r);
    }
    host.stats->retain(keep);
    host.stats->retain_scopes(keep_scopes);
    host.pairs = std::move(pairs);
    host.stats->set_pinglist(PinglistReport{true, group_name(group_of_[h]), address_of(h), epoch,
                                            list.group.size(), 0, members_.size()});
  }

  const std::string& rail_names(std::size_t r) const { return rails_[r]; }

  // ECMP: the spine a flow between two RNICs hashes to, the same for every
  // probe of the flow.
  uint16_t spine_of(std::size_t from, std::size_t to, std::size_t rail, uint64_t flow) const {
    const std::string key = address_of(from) + ">" + address_of(to) + "/" + std::to_string(rail);
    return static_cast<uint16_t>(stable_hash(key, flow) % s_.shape.spines);
  }

  double survival(const Leg& leg, double t) const {
    double p = 1 - s_.background_loss;
    for (const Fault& f : s_.faults) {
      if (t < f.start || t >= f.end || f.kind == "host_down" || f.kind == "host_stall") continue;
      if (crosses(f, leg)) p *= 1 - f.loss;
    }
    return p;
  }

  // The exporter's account of stalls (UdProber): a stalled prober sends
  // nothing until its stall ends; a probe that would be lost while its own
  // host stalls within its timeout is invalid; a stalled responder answers
  // when its stall ends, and the reply is invalid when it comes within the
  // 4 timeouts (at most 10 s) the prober waits, lost after. Stalls the
  // exporter does not notice change nothing: they are shorter than the
  // timeout. A responder's receive queue is taken to hold what a stall
  // brings.
  void probe(std::size_t h, double t) {
    Host& host = hosts_[h];
    if (!host.stats) return;
    if (stall_at(h, t).second > 0) return;
    // A stall that ended since the last probe: the heartbeat ran late.
    for (auto it = stalls_ending_from(h, t - s_.probe.interval); it != host.stalls.end(); ++it) {
      const auto [from, to] = *it;
      if (to > t) break;
      if (to > t - s_.probe.interval) {
        host.stats->stalls()->armed(clock_at(from), clock_at(from) + kHeartbeat);
        host.stats->stalls()->check(clock_at(to));
        // The heartbeat runs again as the stall ends: the stall is over.
        host.stats->stalls()->armed(clock_at(to), clock_at(to) + kHeartbeat);
      }
    }
    const double wait = std::min(4 * s_.probe.timeout, std::max(s_.probe.timeout, 10.0));
    for (Pair& p : host.pairs) {
      const uint8_t flow = static_cast<uint8_t>(p.seq++ % s_.probe.flows);
      p.series->sent(clock_at(t));
      bool lost = down(p.target, t);
      if (!lost) {
        const auto [far_from, far_to] = stall_at(p.target, t);
        if (far_to > 0 && noticed(far_to - far_from)) {
          arrived(h, p);  // a stalled responder receives it, late
          if (far_to - t < wait) {
            p.series->invalid(invalid::responder_stall);
            continue;
          }
          lost = true;
        }
      }
      if (!lost) {
        const std::size_t g = group_of_[h], tg = group_of_[p.target];
        const Leg request{h, p.target, g, tg, p.rail, p.request_spine[flow], true};
        const Leg reply{p.target, h, tg, g, p.rail, p.reply_spine[flow], false};
        const double to = survival(request, t), back = survival(reply, t);
        const double survive = to * back;
        lost = survive < 1 && std::uniform_real_distribution<double>(0, 1)(rng_) >= survive;
        // Which way a lost probe went, from a stream of its own, so that the
        // losses are drawn as they were before the responder was counted:
        // the request with probability (1 - to) / (1 - to back).
        std::uniform_real_distribution<double> direction(0, 1);
        const bool request_lost = lost && direction(direction_rng_) < (1 - to) / (1 - survive);
        if (!request_lost) arrived(h, p);
      }
      if (!lost) {
        p.series->success(10e-6, start_ + t, clock_at(t));
      } else if (noticed_stall_between(h, t, t + s_.probe.timeout)) {
        p.series->invalid(invalid::local_stall);
      } else {
        p.series->lost(flow, clock_at(t));
      }
    }
  }

  // Simulated time as the exporter's monotonic clock.
  static StallWatch::Clock::time_point clock_at(double t) {
    return StallWatch::Clock::time_point{} + std::chrono::hours(1) +
           std::chrono::duration_cast<StallWatch::Clock::duration>(
               std::chrono::duration<double>(t));
  }

  void scrape(double t, std::map<std::string, std::ofstream>& out) {
    char stamp[32];
    std::snprintf(stamp, sizeof stamp, " %.3f\n", start_ + t);
    for (std::size_t h = 0; h < hosts_.size(); ++h) {
      if (!hosts_[h].stats) continue;
      MetricSink sink;
      hosts_[h].stats->add_metrics(sink, clock_at(t));
      const std::string scrape_labels = "instance=\"" + instance_of(h) + "\",job=\"rdma_exporter\"";
      for (const prometheus::MetricFamily& f : sink.take()) {
        const auto it = out.find(f.name);
        if (it == out.end()) continue;
        for (const prometheus::ClientMetric& m : f.metric) {
          std::ostream& o = it->second;
          std::string labels = scrape_labels;
          for (const auto& l : m.label) labels += ',' + l.name + "=\"" + l.value + '"';
          if (f.type == prometheus::MetricType::Histogram) {
            // As the exporter renders them (exporter/formats): le="4", le="+Inf".
            for (const auto& b : m.histogram.bucket) {
              o << f.name << "_bucket{" << labels << ",le=\"" << format_number(b.upper_bound)
                << "\"} " << b.cumulative_count << stamp;
            }
            o << f.name << "_count{" << labels << "} " << m.histogram.sample_count << stamp;
            o << f.name << "_sum{" << labels << "} " << m.histogram.sample_sum << stamp;
            continue;
          }
          o << f.name << '{' << labels << "} "
            << (f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value)
            << stamp;
        }
      }
    }
  }

  // The faults as the elements a culprit should name.
  void write_truth(const std::string& path) const {
    std::ofstream o(path);
    o << std::fixed << std::setprecision(3);
    o << "{\"start\": " << start_ << ", \"end\": " << start_ + s_.duration
      << ", \"epoch\": " << s_.probe.epoch << ", \"faults\": [\n";
    bool first = true;
    for (const Fault& f : s_.faults) {
      o << (first ? "" : ",\n") << "  {\"kind\": \"" << f.kind << "\"";
      first = false;
      const auto field = [&](const char* k, const std::string& v) {
        o << ", \"" << k << "\": \"" << v << "\"";
      };
      if (f.kind == "rnic" || f.kind == "host_down") field("host", address_of(f.host));
      if (f.kind == "rnic") field("device", device_name(f.rail));
      if (f.group >= 0) field("group", group_name(f.group));
      if (f.group < 0 && f.host >= 0) field("group", group_name(group_of_[f.host]));
      if (f.to_group >= 0) field("to_group", group_name(f.to_group));
      if (f.rail >= 0) field("rail", rail_name(f.rail));
      if (f.spine >= 0) o << ", \"spine\": " << f.spine;
      o << ", \"loss\": " << f.loss << ", \"direction\": \""
        << (f.request && f.reply ? "both"
            : f.request          ? "request"
                                 : "reply")
        << "\"";
      o << ", \"start\": " << start_ + f.start
        << ", \"end\": " << (std::isinf(f.end) ? start_ + s_.duration : start_ + f.end);
      if (f.kind == "host_stall") {
        o << ", \"stall\": " << f.stall << ", \"hosts\": [";
        for (std::size_t i = 0; i < f.stall_hosts.size(); ++i) {
          o << (i ? ", " : "") << '"' << address_of(f.stall_hosts[i]) << '"';
        }
        o << "]";
      }
      o << "}";
    }
    o << "\n]}\n";
  }

  Scenario s_;
  double start_;
  std::vector<FleetMember> members_;
  std::vector<std::size_t> group_of_;
  std::vector<std::string> rails_;
  std::vector<Host> hosts_;
  std::mt19937_64 rng_{s_.seed};
  std::mt19937_64 direction_rng_{s_.seed + 1};
};

}  // namespace
}  // namespace rdma_exporter::probe

int main(int argc, char** argv) {
  using namespace rdma_exporter::probe;
  if (argc != 5 || std::string(argv[3]) != "--start") {
    std::cerr << "usage: fleet_faults_sim SCENARIO.yml OUT_DIR --start UNIX_SECONDS\n";
    return 2;
  }
  try {
    Scenario s = read_scenario(argv[1]);
    Simulation sim(std::move(s), std::stod(argv[4]));
    sim.run(argv[2]);
  } catch (const std::exception& e) {
    std::cerr << argv[1] << ": " << e.what() << "\n";
    return 2;
  }
  return 0;
}
