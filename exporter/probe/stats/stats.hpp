#pragma once

#include <prometheus/histogram.h>

#include <array>
#include <chrono>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/metric_sink.hpp"
#include "exporter/probe/stats/pair_window.hpp"
#include "exporter/probe/stats/stalls.hpp"

// What the probe has measured, shared between the probe's event loop (which
// writes) and the collecting thread (which reads). exporter/probe's metrics
// all come from here.
namespace rdma_exporter::probe {

// Buckets of rdma_probe_latency_seconds: 1 us to 1 s, 1-2.5-5 per decade.
std::vector<double> latency_buckets();

// The failure reasons rdma_probe_errors_total counts.
namespace reason {
inline constexpr const char* refused = "refused";
inline constexpr const char* unreachable = "unreachable";
inline constexpr const char* connect_timeout = "connect_timeout";
inline constexpr const char* protocol = "protocol";
inline constexpr const char* auth = "auth";
inline constexpr const char* rejected = "rejected";
inline constexpr const char* setup = "setup";
inline constexpr const char* qp_error = "qp_error";
inline constexpr const char* remote_error = "remote_error";
inline constexpr const char* disconnected = "disconnected";
// A reload changed the secrets: the session's set-up no longer holds.
inline constexpr const char* retired_secret = "retired_secret";
}  // namespace reason

// Why a probe counts as invalid (rdma_probe_invalid_total).
namespace invalid {
inline constexpr const char* local_stall = "local_stall";  // this host's loop stalled
inline constexpr const char* responder_stall =
    "responder_stall";  // the reply says the responder did
}  // namespace invalid

// What a pair's series include. RC classes have them all; UD classes in the
// fleet's bounded shape (probe.histograms: group) only the counters and the
// last success, their latencies going to histograms per group (HistogramStats);
// with probe.pair_series: failing not even those. Every pair has its window
// (rdma_probe_pair_window_*), exported only while it holds a loss or failure.
struct SeriesShape {
  bool histogram = true;  // rdma_probe_latency_seconds per pair
  bool up = true;         // rdma_probe_up per pair
  // rdma_probe_{sent,timeouts,errors,path_timeouts,invalid}_total and the
  // last success per pair (probe.pair_series: all)
  bool counters = true;

  auto operator<=>(const SeriesShape&) const = default;
};

using ProbeClock = std::chrono::steady_clock;

// What every UD pair of one local port, class and scope (targets in this
// host's group, or in others) did: probes sent, lost and invalid, and how
// many remote ports were probed and how many of them lost a probe in the
// last kWindow. A pair's series come and go as the pinglist rotates; these
// stay, so rules read a port's figures from a few series instead of summing
// its pairs'.
class ScopeStats {
 public:
  static constexpr ProbeClock::duration kWindow = PairWindow::kWindow;

  explicit ScopeStats(Labels labels) : labels_(std::move(labels)) {}
  // `peer` names the remote port (its target and port).
  void sent(const std::string& peer, ProbeClock::time_point now);
  void lost(const std::string& peer, ProbeClock::time_point now);
  void invalid();
  void add_metrics(MetricSink& sink, ProbeClock::time_point now) const;
  // Remote ports remembered (those probed within the last 2 windows at most).
  std::size_t remembered() const;

 private:
  struct Seen {
    ProbeClock::time_point sent;
    std::optional<ProbeClock::time_point> lost;
  };
  const Labels labels_;
  mutable std::mutex mutex_;
  uint64_t sent_ = 0;
  uint64_t lost_ = 0;
  uint64_t invalid_ = 0;
  std::map<std::string, Seen, std::less<>> peers_;
  ProbeClock::time_point pruned_{};
};

// The wall clock's seconds since the Unix epoch: when a probe last
// succeeded (SeriesStats::success).
inline double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One pair of ports probed with one class.
class SeriesStats {
 public:
  explicit SeriesStats(Labels labels, SeriesShape shape = {});

  // UD pairs: also count in their port's scope (ScopeStats), as the remote
  // port their `target`, `remote_device` and `remote_port` labels name.
  void set_scope(std::shared_ptr<ScopeStats> scope);

  void sent(ProbeClock::time_point now = ProbeClock::now());
  void success(double seconds, double unix_now, ProbeClock::time_point now = ProbeClock::now());
  void timeout(ProbeClock::time_point now = ProbeClock::now());
  // A UD probe that got no reply in time, on path (flow label) `path`:
  // counted as a timeout, and by path once a path has lost one.
  void lost(uint8_t path, ProbeClock::time_point now = ProbeClock::now());
  void error(const std::string& why, ProbeClock::time_point now = ProbeClock::now());
  // A probe neither lost nor timed because a stall touched it (invalid::).
  void invalid(const char* why);

  // With its window gauges when `window` (its pair fails in some class:
  // ProbeStats::add_metrics).
  void add_metrics(MetricSink& sink, ProbeClock::time_point now, bool window) const;
  // With its window gauges while it fails itself.
  void add_metrics(MetricSink& sink, ProbeClock::time_point now = ProbeClock::now()) const {
    add_metrics(sink, now, failing(now));
  }
  const Labels& labels() const { return labels_; }
  const SeriesShape& shape() const { return shape_; }
  // Its labels but the class's (op, size, tclass): the same for every class
  // probing one pair of ports.
  const std::string& pair() const { return pair_; }
  // A probe lost or failed within the window ending at `now`.
  bool failing(ProbeClock::time_point now) const;

 private:
  void add_window_metrics(MetricSink& sink, const PairWindow::Totals& w,
                          const PairWindow::PathCounts& paths) const;

  const Labels labels_;
  const SeriesShape shape_;
  const std::string pair_;
  prometheus::Histogram latency_;
  mutable std::mutex mutex_;
  std::shared_ptr<ScopeStats> scope_;
  std::string peer_;
  uint64_t sent_ = 0;
  uint64_t timeouts_ = 0;
  std::map<uint8_t, uint64_t> path_lost_;
  std::map<std::string, uint64_t> errors_;
  std::map<std::string, uint64_t> invalid_;
  bool up_ = false;
  double last_success_ = 0;
  PairWindow window_;
};

// A histogram of latencies with fixed labels, shared by every prober that
// observes into it: the UD classes' latency per (local port, class, target
// group) and their prober and responder delays per (local port, class).
class HistogramStats {
 public:
  HistogramStats(std::string name, std::string help, Labels labels);
  void observe(double seconds) { histogram_.Observe(seconds); }
  void add_metrics(MetricSink& sink) const;

 private:
  const std::string name_;
  const std::string help_;
  const Labels labels_;
  prometheus::Histogram histogram_;
};

// Why a port's UD queue pair dropped a datagram (rdma_probe_ud_dropped_total).
namespace ud_drop {
inline constexpr const char* not_admitted = "not_admitted";  // a request from no admitted prober
inline constexpr const char* rate_limited = "rate_limited";  // above its admissions' rate
inline constexpr const char* unexpected = "unexpected";      // a reply no session waits for
inline constexpr const char* malformed = "malformed";        // not a probe datagram
inline constexpr const char* send_queue_full = "send_queue_full";
inline constexpr const char* send_error = "send_error";
inline constexpr const char* queue_pair_failed = "queue_pair_failed";
}  // namespace ud_drop

// One local port's UD queue pair.
// Where a prober probing this host's port is, as the responder tells it:
// `group` when its port is one that a host of this host's own group
// listed in its hello (the probe's pinglist probes every host of the
// group), `remote` otherwise.
enum class ProberScope : uint8_t { group = 0, remote = 1 };
const char* prober_scope_name(ProberScope scope);

class UdPortStats {
 public:
  explicit UdPortStats(Labels labels) : labels_(std::move(labels)) {}
  void dropped(const char* why);
  void answered();
  // An admitted request from a prober of `scope`, and how many requests its
  // sequence number says were sent up to it that were not counted yet
  // (UdSequences).
  void request(ProberScope scope, uint64_t expected);
  // Prober queue pairs admitted, of each scope.
  void set_peers(std::size_t group, std::size_t remote);
  // Address handles the queue pair holds (cached, and retired ones whose
  // sends are still in flight).
  void set_address_handles(std::size_t n);
  void add_metrics(MetricSink& sink) const;

 private:
  const Labels labels_;
  mutable std::mutex mutex_;
  std::map<std::string, uint64_t> dropped_;
  uint64_t answered_ = 0;
  // By ProberScope.
  std::array<uint64_t, 2> expected_{};
  std::array<uint64_t, 2> received_{};
  std::array<std::size_t, 2> peers_{};
  std::size_t address_handles_ = 0;
};

// This host's pinglist in the current epoch.
struct PinglistReport {
  bool self_listed = false;  // this host was found in the target list
  std::string group;         // its group
  // Its address as the target list names it (host:port), or when not listed
  // its host name and probe port: what other hosts' series call it `target`.
  std::string address;
  uint64_t epoch = 0;
  std::size_t group_hosts = 0;   // hosts of its own group it probes
  std::size_t remote_hosts = 0;  // hosts of other groups it probes this epoch
  std::size_t fleet_hosts = 0;   // hosts in the target list

  bool operator==(const PinglistReport&) const = default;
};

// What the probe says of this host's RDMA devices and ports: which it uses,
// and why not the others.
namespace device_state {
inline constexpr const char* in_use = "in_use";      // opened, probing on its ports
inline constexpr const char* excluded = "excluded";  // probe.device does not match
inline constexpr const char* failed = "failed";      // cannot be opened (looked at again)
inline constexpr const char* gone = "gone";          // was in use and left; resumed on return
}  // namespace device_state
namespace port_state {
inline constexpr const char* probing = "probing";    // in use, link active
inline constexpr const char* down = "down";          // in use, link not active
inline constexpr const char* excluded = "excluded";  // probe.port or probe.link_layer
inline constexpr const char* inactive = "inactive";  // never seen active: not used yet
inline constexpr const char* no_gid = "no_gid";      // active, but no GID to probe with
}  // namespace port_state

struct DeviceReport {
  std::string device;
  std::string state;  // device_state
  // In use only: thread domain, completion timestamps.
  bool thread_domain = false;
  bool timestamps = false;
  bool operator==(const DeviceReport&) const = default;
};

struct PortReport {
  std::string device;
  uint8_t port = 1;
  std::string state;  // port_state
  std::string rail;   // ports in use
  bool operator==(const PortReport&) const = default;
};

// A target as a host: whether its control port answers and how many ports
// it lists.
class TargetStats {
 public:
  explicit TargetStats(Labels labels) : labels_(std::move(labels)) {}
  void answered(std::size_t ports);
  void failed(const std::string& why);
  void add_metrics(MetricSink& sink) const;
  const Labels& labels() const { return labels_; }

 private:
  const Labels labels_;
  mutable std::mutex mutex_;
  bool up_ = false;
  std::size_t ports_ = 0;
  std::map<std::string, uint64_t> errors_;
};

// Everything the probe exports.
class ProbeStats {
 public:
  // The series of a target and class, made on first use. Its labels are
  // fixed by its key: a target whose labels change gets a new series.
  std::shared_ptr<SeriesStats> series(const Labels& labels, SeriesShape shape = {});
  // Series not in `keep` stop being exported, except pairs without
  // counters (probe.pair_series: failing) whose window still holds a loss
  // or failure at `now`: they stay until it no longer does, so a pair that
  // fails and leaves the pinglist still shows for up to the window.
  void retain(const std::vector<std::shared_ptr<SeriesStats>>& keep,
              ProbeClock::time_point now = ProbeClock::now());

  // A shared histogram, made on first use; those not in `keep` go.
  std::shared_ptr<HistogramStats> histogram(const std::string& name, const std::string& help,
                                            const Labels& labels);
  void retain_histograms(const std::vector<std::shared_ptr<HistogramStats>>& keep);

  // A local port's scope, made on first use; those not in `keep` go.
  std::shared_ptr<ScopeStats> scope(const Labels& labels);
  void retain_scopes(const std::vector<std::shared_ptr<ScopeStats>>& keep);

  // A local port's UD queue pair, made on first use; those not in `keep` go.
  std::shared_ptr<UdPortStats> ud_port(const Labels& labels);
  void retain_ud_ports(const std::vector<std::shared_ptr<UdPortStats>>& keep);

  void set_pinglist(const PinglistReport& report);

  // The target's own series, made on first use.
  std::shared_ptr<TargetStats> target(const Labels& labels);
  void retain_targets(const std::vector<std::shared_ptr<TargetStats>>& keep);

  void set_local(std::vector<DeviceReport> devices, std::vector<PortReport> ports,
                 const std::string& memory);
  void device_released(const std::string& device, const std::string& why);
  void set_targets(const std::map<std::string, int>& by_source);
  void file_sd_read(bool ok);

  void responder_session_opened();
  void responder_session_closed(bool idle);
  void responder_rejected(const std::string& why);

  // The event loop's own stalls.
  const std::shared_ptr<StallWatch>& stalls() const { return stalls_; }

  void add_metrics(MetricSink& sink) const { add_metrics(sink, ProbeClock::now()); }
  // With the scopes' windows ending at `now`.
  void add_metrics(MetricSink& sink, ProbeClock::time_point now) const;

 private:
  // The parts of add_metrics() that read this object's own state, each
  // called with mutex_ held: the devices (and their releases), the ports,
  // the targets and file_sd, the responder, the pinglist.
  void add_device_metrics(MetricSink& sink) const;
  void add_port_metrics(MetricSink& sink) const;
  void add_target_metrics(MetricSink& sink) const;
  void add_responder_metrics(MetricSink& sink) const;
  void add_pinglist_metrics(MetricSink& sink) const;
  // The pairs (SeriesStats::pair) of which some class lost or failed a
  // probe in the window at `now`; mutex_ held.
  std::set<std::string> failing_pairs(ProbeClock::time_point now) const;

  const std::shared_ptr<StallWatch> stalls_ = std::make_shared<StallWatch>();
  mutable std::mutex mutex_;
  std::map<std::pair<Labels, SeriesShape>, std::shared_ptr<SeriesStats>> series_;
  std::map<std::pair<std::string, Labels>, std::shared_ptr<HistogramStats>> histograms_;
  std::map<Labels, std::shared_ptr<UdPortStats>> ud_ports_;
  std::map<Labels, std::shared_ptr<ScopeStats>> scopes_;
  std::optional<PinglistReport> pinglist_;
  std::map<Labels, std::shared_ptr<TargetStats>> targets_by_labels_;
  std::vector<DeviceReport> devices_;
  std::vector<PortReport> ports_;
  std::string memory_;
  std::map<std::pair<std::string, std::string>, uint64_t> released_;  // device, why
  std::map<std::string, int> targets_;
  uint64_t file_sd_failures_ = 0;
  bool file_sd_ok_ = true;
  int sessions_ = 0;
  uint64_t idle_closed_ = 0;
  std::map<std::string, uint64_t> rejected_;
};

}  // namespace rdma_exporter::probe
