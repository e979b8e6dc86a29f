// Fleet pinglists, simulated: every host of a fleet computes its own pinglist
// with compute_pinglist, epoch after epoch, and this program adds up what the
// fleet then does: probes sent and answered per RNIC, series per host, how
// long until every rack pair and every RNIC pair inside a rack was probed,
// and what one host's computation costs.
//
//   build/bench/pinglist_bench                  # 100, 1,000 and 10,000 hosts
//   build/bench/pinglist_bench --hosts 4096 --rack-size 32 --rails 8 --remote 2
//                              --epoch-seconds 60
//   build/bench/pinglist_bench --pair-series failing   # the sparse pair shape
//
// Hosts are 10.a.b.c:9879 in racks "r0000", "r0001", ... of --rack-size
// hosts (the last rack holds the rest), with --rails rails named
// 192.168.<100+i>.0/24 and one RNIC per rail; a probe every second per
// RNIC pair, one probe class.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "common/metric_sink.hpp"
#include "exporter/probe/plan/pinglist.hpp"
#include "exporter/probe/stats/stats.hpp"
#include "tests/support/fleet_probe_host.hpp"

namespace rdma_exporter::probe {
namespace {

constexpr double kIntervalSeconds = 1.0;  // probe interval
constexpr std::size_t kClasses = 1;       // probe classes
constexpr std::size_t kMinEpochs = 5;     // simulated at least, for the load figures
constexpr std::size_t kMaxEpochs = 200;   // give up on coverage after this many

// Targets the fleet mode must meet.
constexpr double kMaxProbesPerRnic = 100;  // sent + answered, per second
constexpr std::size_t kMaxSeriesPerHost = 2000;
constexpr double kMaxCoverSeconds = 300;    // every rack pair on every rail
constexpr double kMaxReceivedOverMean = 2;  // busiest RNIC against the mean

struct Fleet {
  std::size_t hosts = 0;
  std::size_t rack_size = 32;
  std::size_t rails = 8;
  std::size_t remote = 4;
  std::size_t epoch_seconds = 60;
  bool pair_counters = true;  // probe.pair_series: all (false: failing)
};

using PortPlan = testing::FleetProbePort;

// The series one host exports in the fleet mode, counted by rendering the
// probe's own ProbeStats for the host's plan (tests/support/fleet_probe_host).
std::size_t fleet_series_per_host(const std::vector<PortPlan>& ports, std::size_t target_hosts,
                                  bool pair_counters) {
  static std::map<std::vector<std::tuple<std::size_t, bool, bool>>, std::size_t> cache;
  std::vector<std::tuple<std::size_t, bool, bool>> key;
  for (const PortPlan& p : ports) key.emplace_back(p.targets, p.own_group, p.remote);
  key.emplace_back(target_hosts, pair_counters, false);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  ProbeStats stats;
  testing::fill_fleet_probe_stats(stats, ports, target_hosts, {}, pair_counters);
  MetricSink sink;
  stats.add_metrics(sink);
  std::size_t n = 0;
  for (const auto& f : sink.take()) {
    for (const auto& m : f.metric) {
      // A histogram is its buckets (with +Inf), _sum and _count.
      n += f.type == prometheus::MetricType::Histogram ? m.histogram.bucket.size() + 2 : 1;
    }
  }
  cache.emplace(std::move(key), n);
  return n;
}

struct Result {
  std::size_t racks = 0;
  std::size_t smallest_rack = 0;
  std::size_t epochs = 0;  // simulated
  double sent_mean = 0, sent_max = 0;
  double received_mean = 0, received_max = 0;
  double remote_mean = 0, remote_max = 0;  // received from other racks
  double total_max = 0;                    // sent + received, busiest RNIC
  double series_mean = 0;
  std::size_t series_max = 0;
  std::size_t bound = 0;            // ceil((M - 1) / (S_min · k))
  std::size_t cover_all_rails = 0;  // epochs; 0: not within kMaxEpochs
  std::size_t cover_one_rail = 0;
  std::size_t cover_intra = 0;
  double compute_median_us = 0;
};

std::string host_id(std::size_t h) {
  return "10." + std::to_string(h >> 16 & 0xff) + "." + std::to_string(h >> 8 & 0xff) + "." +
         std::to_string(h & 0xff) + ":9879";
}

std::string rack_name(std::size_t r) {
  char name[16];
  std::snprintf(name, sizeof name, "r%04zu", r);
  return name;
}

Result simulate(const Fleet& fleet) {
  const std::size_t n = fleet.hosts;
  const std::size_t racks = (n + fleet.rack_size - 1) / fleet.rack_size;
  std::vector<FleetMember> members;
  std::vector<std::size_t> rack_of(n);
  for (std::size_t h = 0; h < n; ++h) {
    rack_of[h] = h / fleet.rack_size;
    members.push_back({host_id(h), rack_name(rack_of[h])});
  }
  std::vector<std::string> rails;
  for (std::size_t r = 0; r < fleet.rails; ++r) {
    rails.push_back("192.168." + std::to_string(100 + r) + ".0/24");
  }
  const std::size_t rail_count = fleet.rails;
  std::vector<std::size_t> rack_size(racks, 0);
  for (std::size_t h = 0; h < n; ++h) ++rack_size[rack_of[h]];

  Result result;
  result.racks = racks;
  result.smallest_rack = *std::min_element(rack_size.begin(), rack_size.end());
  if (racks > 1 && fleet.remote > 0) {
    const std::size_t slots = result.smallest_rack * fleet.remote;
    result.bound = (racks - 1 + slots - 1) / slots;
  }

  // Ordered rack pairs probed so far, per rail and on any rail.
  const std::size_t pairs = racks * (racks - 1);
  std::vector<char> pair_rail(racks * racks * rail_count, 0);
  std::vector<char> pair_any(racks * racks, 0);
  std::vector<std::size_t> covered_rail(rail_count, 0);
  std::size_t covered_any = 0;
  // Ordered RNIC pairs inside racks: S (S - 1) per rack and rail.
  std::size_t intra_pairs = 0;
  for (const std::size_t s : rack_size) intra_pairs += s * (s - 1) * rail_count;

  const uint64_t start = pinglist_epoch(std::chrono::sys_days{std::chrono::year{2026} / 11 / 29},
                                        std::chrono::seconds(fleet.epoch_seconds));
  double sent_sum = 0, received_sum = 0, remote_sum = 0, series_sum = 0;
  std::vector<double> compute_us;
  std::vector<std::size_t> received(n * rail_count);
  std::vector<std::size_t> received_remote(n * rail_count);
  std::vector<std::size_t> sent(n * rail_count);
  for (std::size_t e = 0; e < kMaxEpochs; ++e) {
    const bool all_rails_done = std::all_of(covered_rail.begin(), covered_rail.end(),
                                            [&](std::size_t c) { return c == pairs; });
    if (e >= kMinEpochs && all_rails_done && result.cover_intra != 0) break;
    std::fill(received.begin(), received.end(), 0);
    std::fill(received_remote.begin(), received_remote.end(), 0);
    std::size_t intra_seen = 0;
    const PinglistSettings settings{fleet.remote, start + e};
    for (std::size_t h = 0; h < n; ++h) {
      const auto before = std::chrono::steady_clock::now();
      const Pinglist list =
          compute_pinglist(members, members[h].id, members[h].group, rails, settings);
      const auto after = std::chrono::steady_clock::now();
      if (e == 0) {
        compute_us.push_back(std::chrono::duration<double, std::micro>(after - before).count());
      }
      std::vector<PortPlan> ports;
      std::set<std::size_t> target_hosts(list.group.begin(), list.group.end());
      for (std::size_t r = 0; r < rail_count; ++r) {
        const std::vector<std::size_t>& remote = list.remote.at(rails[r]);
        sent[h * rail_count + r] = list.group.size() + remote.size();
        for (const std::size_t t : list.group) ++received[t * rail_count + r];
        intra_seen += list.group.size();
        const PortPlan port{list.group.size() + remote.size(), !list.group.empty(),
                            !remote.empty()};
        for (const std::size_t t : remote) {
          target_hosts.insert(t);
          ++received[t * rail_count + r];
          ++received_remote[t * rail_count + r];
          const std::size_t a = rack_of[h], b = rack_of[t];
          char& seen = pair_rail[(a * racks + b) * rail_count + r];
          if (seen == 0) {
            seen = 1;
            ++covered_rail[r];
          }
          if (pair_any[a * racks + b] == 0) {
            pair_any[a * racks + b] = 1;
            ++covered_any;
          }
        }
        ports.push_back(port);
      }
      const std::size_t series =
          fleet_series_per_host(ports, target_hosts.size(), fleet.pair_counters);
      series_sum += static_cast<double>(series);
      result.series_max = std::max(result.series_max, series);
    }
    for (std::size_t i = 0; i < n * rail_count; ++i) {
      const double out = static_cast<double>(sent[i] * kClasses) / kIntervalSeconds;
      const double in = static_cast<double>(received[i] * kClasses) / kIntervalSeconds;
      const double from_racks =
          static_cast<double>(received_remote[i] * kClasses) / kIntervalSeconds;
      sent_sum += out;
      received_sum += in;
      remote_sum += from_racks;
      result.remote_max = std::max(result.remote_max, from_racks);
      result.sent_max = std::max(result.sent_max, out);
      result.received_max = std::max(result.received_max, in);
      result.total_max = std::max(result.total_max, out + in);
    }
    ++result.epochs;
    if (result.cover_intra == 0 && intra_seen == intra_pairs) result.cover_intra = e + 1;
    if (result.cover_one_rail == 0 && covered_any == pairs) result.cover_one_rail = e + 1;
    if (result.cover_all_rails == 0 && std::all_of(covered_rail.begin(), covered_rail.end(),
                                                   [&](std::size_t c) { return c == pairs; })) {
      result.cover_all_rails = e + 1;
    }
  }
  const double rnic_epochs = static_cast<double>(n * rail_count * result.epochs);
  result.sent_mean = sent_sum / rnic_epochs;
  result.received_mean = received_sum / rnic_epochs;
  result.remote_mean = remote_sum / rnic_epochs;
  result.series_mean = series_sum / static_cast<double>(n * result.epochs);
  std::sort(compute_us.begin(), compute_us.end());
  result.compute_median_us = compute_us[compute_us.size() / 2];
  return result;
}

std::string epochs_text(std::size_t epochs, std::size_t epoch_seconds) {
  if (epochs == 0) return "not within " + std::to_string(kMaxEpochs) + " epochs";
  return std::to_string(epochs) + " (" + std::to_string(epochs * epoch_seconds) + " s)";
}

std::string number(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// 10000 as "10,000".
std::string grouped(std::size_t value) {
  std::string digits = std::to_string(value);
  for (std::size_t i = digits.size(); i > 3; i -= 3) digits.insert(i - 3, ",");
  return digits;
}

const char* pass(bool ok) {
  return ok ? "PASS" : "FAIL";
}

void print_table(const std::vector<Fleet>& fleets, const std::vector<Result>& results) {
  const Fleet& first = fleets.front();
  std::printf("rack size %zu, %zu rails (one RNIC each), remote_per_rail %zu, epoch %zu s,\n",
              first.rack_size, first.rails, first.remote, first.epoch_seconds);
  std::printf("a probe every %.0f s per RNIC pair, %zu probe class\n\n", kIntervalSeconds,
              kClasses);
  const auto row = [&](const char* what, auto cell) {
    std::printf("| %s |", what);
    for (std::size_t i = 0; i < results.size(); ++i) {
      std::printf(" %s |", cell(fleets[i], results[i]).c_str());
    }
    std::printf("\n");
  };
  std::printf("| |");
  for (const Fleet& fleet : fleets) std::printf(" %s hosts |", grouped(fleet.hosts).c_str());
  std::printf("\n|---|");
  for (std::size_t i = 0; i < fleets.size(); ++i) std::printf("---|");
  std::printf("\n");
  row("racks (smallest)", [](const Fleet&, const Result& r) {
    return std::to_string(r.racks) + " (" + std::to_string(r.smallest_rack) + ")";
  });
  row("epochs simulated", [](const Fleet&, const Result& r) { return std::to_string(r.epochs); });
  row("probes/s sent per RNIC, mean / max", [](const Fleet&, const Result& r) {
    return number(r.sent_mean, 1) + " / " + number(r.sent_max, 0);
  });
  row("probes/s received per RNIC, mean / max", [](const Fleet&, const Result& r) {
    return number(r.received_mean, 1) + " / " + number(r.received_max, 0);
  });
  row("received max / mean",
      [](const Fleet&, const Result& r) { return number(r.received_max / r.received_mean, 2); });
  row("of which from other racks, mean / max", [](const Fleet&, const Result& r) {
    return number(r.remote_mean, 1) + " / " + number(r.remote_max, 0);
  });
  row("probes/s sent + received, busiest RNIC",
      [](const Fleet&, const Result& r) { return number(r.total_max, 0); });
  row("QPs per RNIC (one UD QP per port probes and answers)",
      [](const Fleet&, const Result&) { return std::string("1"); });
  row("series per host, mean / max", [](const Fleet&, const Result& r) {
    return number(r.series_mean, 0) + " / " + std::to_string(r.series_max);
  });
  row("bound ceil((M-1)/(S_min k)), epochs",
      [](const Fleet&, const Result& r) { return std::to_string(r.bound); });
  row("epochs until every rack pair on every rail", [](const Fleet& f, const Result& r) {
    return epochs_text(r.cover_all_rails, f.epoch_seconds);
  });
  row("epochs until every rack pair on one rail at least", [](const Fleet& f, const Result& r) {
    return epochs_text(r.cover_one_rail, f.epoch_seconds);
  });
  row("epochs until every intra-rack RNIC pair",
      [](const Fleet& f, const Result& r) { return epochs_text(r.cover_intra, f.epoch_seconds); });
  row("compute_pinglist for one host, median",
      [](const Fleet&, const Result& r) { return number(r.compute_median_us, 0) + " us"; });
  row("target: <= 100 probes/s per RNIC", [](const Fleet&, const Result& r) {
    return std::string(pass(r.total_max <= kMaxProbesPerRnic));
  });
  row("target: <= 2,000 series per host", [](const Fleet&, const Result& r) {
    return std::string(pass(r.series_max <= kMaxSeriesPerHost));
  });
  row("target: rack pairs within 5 min", [](const Fleet& f, const Result& r) {
    return std::string(
        pass(r.cover_all_rails != 0 &&
             static_cast<double>(r.cover_all_rails * f.epoch_seconds) <= kMaxCoverSeconds));
  });
  row("target: no RNIC above 2x mean received", [](const Fleet&, const Result& r) {
    return std::string(pass(r.received_max <= kMaxReceivedOverMean * r.received_mean));
  });
}

int usage() {
  std::fprintf(stderr,
               "usage: pinglist_bench [--hosts N] [--rack-size S] [--rails R] [--remote K] "
               "[--epoch-seconds E] [--pair-series all|failing]\n");
  return 2;
}

}  // namespace
}  // namespace rdma_exporter::probe

int main(int argc, char** argv) {
  using namespace rdma_exporter::probe;
  Fleet base;
  std::vector<std::size_t> sizes = {100, 1000, 10000};
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) return usage();
    if (flag == "--pair-series") {
      const std::string_view v = argv[++i];
      if (v != "all" && v != "failing") return usage();
      base.pair_counters = v == "all";
      continue;
    }
    char* end = nullptr;
    const unsigned long long value = std::strtoull(argv[++i], &end, 10);
    if (end == argv[i] || *end != '\0') return usage();
    if (flag == "--hosts") {
      sizes = {value};
    } else if (flag == "--rack-size") {
      base.rack_size = value;
    } else if (flag == "--rails") {
      base.rails = value;
    } else if (flag == "--remote") {
      base.remote = value;
    } else if (flag == "--epoch-seconds") {
      base.epoch_seconds = value;
    } else {
      return usage();
    }
  }
  if (base.rack_size == 0 || base.rails == 0 || base.epoch_seconds == 0) return usage();
  for (const std::size_t hosts : sizes) {
    if (hosts < 2 || hosts > (std::size_t{1} << 24)) return usage();
  }
  std::vector<Fleet> fleets;
  std::vector<Result> results;
  for (const std::size_t hosts : sizes) {
    Fleet fleet = base;
    fleet.hosts = hosts;
    fleets.push_back(fleet);
    results.push_back(simulate(fleet));
  }
  print_table(fleets, results);
  return 0;
}
