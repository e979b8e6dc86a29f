#include "exporter/probe/stats/stats.hpp"

#include <algorithm>
#include <set>

namespace rdma_exporter::probe {

namespace {

// The stats of `map` whose pointers are not in `keep` go, but for those
// `linger` holds to.
template <typename Map, typename T, typename Linger>
void keep_only(Map& map, const std::vector<std::shared_ptr<T>>& keep, const Linger& linger) {
  std::set<const T*> wanted;
  for (const auto& k : keep) wanted.insert(k.get());
  std::erase_if(map, [&](const auto& kv) {
    return !wanted.contains(kv.second.get()) && !linger(*kv.second);
  });
}

// The stats of `map` whose pointers are not in `keep` go.
template <typename Map, typename T>
void keep_only(Map& map, const std::vector<std::shared_ptr<T>>& keep) {
  keep_only(map, keep, [](const T&) { return false; });
}

}  // namespace

std::vector<double> latency_buckets() {
  return {1e-6,   2.5e-6, 5e-6, 1e-5,   2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3,
          2.5e-3, 5e-3,   1e-2, 2.5e-2, 5e-2,   0.1,  0.25, 0.5,    1.0};
}

void ScopeStats::sent(const std::string& peer, ProbeClock::time_point now) {
  const std::lock_guard lock(mutex_);
  ++sent_;
  if (auto it = peers_.find(peer); it != peers_.end()) {
    it->second.sent = now;
  } else {
    peers_.emplace(peer, Seen{now, std::nullopt});
  }
  // Forget the remote ports not probed for a window, once a window: those
  // the pinglist rotated away.
  if (now - pruned_ >= kWindow) {
    std::erase_if(peers_, [&](const auto& kv) { return now - kv.second.sent > kWindow; });
    pruned_ = now;
  }
}

void ScopeStats::lost(const std::string& peer, ProbeClock::time_point now) {
  const std::lock_guard lock(mutex_);
  ++lost_;
  if (auto it = peers_.find(peer); it != peers_.end()) it->second.lost = now;
}

void ScopeStats::invalid() {
  const std::lock_guard lock(mutex_);
  ++invalid_;
}

std::size_t ScopeStats::remembered() const {
  const std::lock_guard lock(mutex_);
  return peers_.size();
}

void ScopeStats::add_metrics(MetricSink& sink, ProbeClock::time_point now) const {
  const std::lock_guard lock(mutex_);
  std::size_t probed = 0;
  std::size_t failing = 0;
  for (const auto& [peer, seen] : peers_) {
    if (now - seen.sent > kWindow) continue;
    ++probed;
    if (seen.lost && now - *seen.lost <= kWindow) ++failing;
  }
  sink.counter("rdma_probe_scope_sent_total",
               "UD probes this local port sent to the targets of the scope (group: its own "
               "group's; remote: other groups').",
               labels_, static_cast<double>(sent_));
  sink.counter("rdma_probe_scope_timeouts_total",
               "UD probes this local port sent to the scope's targets that got no reply in time.",
               labels_, static_cast<double>(lost_));
  sink.counter("rdma_probe_scope_invalid_total",
               "UD probes to the scope's targets counted neither lost nor timed because a stall "
               "touched them.",
               labels_, static_cast<double>(invalid_));
  sink.gauge("rdma_probe_scope_peers",
             "Remote ports of the scope this local port probed in the last 2 minutes.", labels_,
             static_cast<double>(probed));
  sink.gauge("rdma_probe_scope_peers_failing",
             "Of the scope's remote ports probed in the last 2 minutes, those that lost a probe "
             "in them.",
             labels_, static_cast<double>(failing));
}

namespace {

// Every label but the class's, each followed by a NUL.
std::string pair_of(const Labels& labels) {
  std::string pair;
  for (const auto& [k, v] : labels) {
    if (k == "op" || k == "size" || k == "tclass") continue;
    pair.append(k).push_back('\0');
    pair.append(v).push_back('\0');
  }
  return pair;
}

}  // namespace

SeriesStats::SeriesStats(Labels labels, SeriesShape shape)
    : labels_(std::move(labels)),
      shape_(shape),
      pair_(pair_of(labels_)),
      latency_(latency_buckets()) {}

void SeriesStats::set_scope(std::shared_ptr<ScopeStats> scope) {
  std::string peer;
  for (const char* name : {"target", "remote_device", "remote_port"}) {
    for (const auto& [k, v] : labels_) {
      if (k == name) peer.append(v).push_back('\0');
    }
  }
  const std::lock_guard lock(mutex_);
  scope_ = std::move(scope);
  peer_ = std::move(peer);
}

void SeriesStats::sent(ProbeClock::time_point now) {
  std::shared_ptr<ScopeStats> scope;
  std::string peer;
  {
    const std::lock_guard lock(mutex_);
    ++sent_;
    window_.sent(now);
    if (!scope_) return;
    scope = scope_;
    peer = peer_;
  }
  scope->sent(peer, now);
}

void SeriesStats::success(double seconds, double unix_now, ProbeClock::time_point now) {
  if (shape_.histogram) latency_.Observe(seconds);
  const std::lock_guard lock(mutex_);
  window_.answered(now);
  up_ = true;
  last_success_ = unix_now;
}

void SeriesStats::timeout(ProbeClock::time_point now) {
  const std::lock_guard lock(mutex_);
  ++timeouts_;
  window_.lost(now);
  up_ = false;
}

void SeriesStats::lost(uint8_t path, ProbeClock::time_point now) {
  std::shared_ptr<ScopeStats> scope;
  std::string peer;
  {
    const std::lock_guard lock(mutex_);
    ++timeouts_;
    ++path_lost_[path];
    window_.lost(now, path);
    up_ = false;
    if (!scope_) return;
    scope = scope_;
    peer = peer_;
  }
  scope->lost(peer, now);
}

void SeriesStats::error(const std::string& why, ProbeClock::time_point now) {
  const std::lock_guard lock(mutex_);
  ++errors_[why];
  window_.failed(now);
  up_ = false;
}

void SeriesStats::invalid(const char* why) {
  std::shared_ptr<ScopeStats> scope;
  {
    const std::lock_guard lock(mutex_);
    ++invalid_[why];
    scope = scope_;
  }
  if (scope) scope->invalid();
}

void SeriesStats::add_metrics(MetricSink& sink, ProbeClock::time_point now, bool window) const {
  if (shape_.histogram) {
    sink.histogram("rdma_probe_latency_seconds",
                   "Round-trip time of successful probes (UD: the network round trip, see "
                   "docs/probe.md; compare with perftest's numbers there).",
                   labels_, latency_.Collect());
  }

  const std::lock_guard lock(mutex_);
  if (window) add_window_metrics(sink, window_.totals(now), window_.path_lost(now));
  if (shape_.up) {
    sink.gauge("rdma_probe_up", "1 when the target's last probe of this class succeeded.", labels_,
               up_ ? 1.0 : 0.0);
  }
  if (!shape_.counters) return;
  sink.counter("rdma_probe_sent_total", "Probes posted.", labels_, static_cast<double>(sent_));
  sink.counter("rdma_probe_timeouts_total",
               "Probes that got no completion within the class's timeout, or whose queue pair "
               "exhausted its transport retries.",
               labels_, static_cast<double>(timeouts_));
  for (const auto& [why, n] : errors_) {
    Labels l = labels_;
    l.emplace_back("reason", why);
    sink.counter("rdma_probe_errors_total",
                 "Probe sessions or probes that failed, by reason (connection set-up, protocol, "
                 "queue pair errors).",
                 std::move(l), static_cast<double>(n));
  }
  for (const auto& [path, n] : path_lost_) {
    Labels l = labels_;
    l.emplace_back("path", std::to_string(path));
    sink.counter("rdma_probe_path_timeouts_total",
                 "UD probes without a reply, by path (the flow label the request was sent with), "
                 "for paths that lost at least one.",
                 std::move(l), static_cast<double>(n));
  }
  for (const auto& [why, n] : invalid_) {
    Labels l = labels_;
    l.emplace_back("reason", why);
    sink.counter("rdma_probe_invalid_total",
                 "Probes counted neither lost nor timed because a stall touched them: this "
                 "host's event loop (local_stall) or the responder's (responder_stall); only "
                 "reasons that happened.",
                 std::move(l), static_cast<double>(n));
  }
  if (last_success_ > 0) {
    sink.gauge("rdma_probe_last_success_timestamp_seconds",
               "Unix time of the last successful probe.", labels_, last_success_);
  }
}

void SeriesStats::add_window_metrics(MetricSink& sink, const PairWindow::Totals& w,
                                     const PairWindow::PathCounts& paths) const {
  const char* const window =
      " in the last two minutes (kept in 10 s steps: 110 to 120 s), by every class of the "
      "pairs that lost or failed one in them, only (docs/probe.md, \"Pair series\").";
  sink.gauge("rdma_probe_pair_window_sent", std::string("Probes posted") + window, labels_,
             static_cast<double>(w.sent));
  sink.gauge("rdma_probe_pair_window_answered", std::string("Probes answered in time") + window,
             labels_, static_cast<double>(w.answered));
  sink.gauge("rdma_probe_pair_window_lost",
             std::string("Probes without a reply in time (lost, or RC timeouts)") + window, labels_,
             static_cast<double>(w.lost));
  sink.gauge(
      "rdma_probe_pair_window_failed",
      std::string("Probes or sessions that failed (rdma_probe_errors_total's reasons)") + window,
      labels_, static_cast<double>(w.failed));
  for (std::size_t p = 0; p < paths.size(); ++p) {
    if (paths[p] == 0) continue;
    Labels l = labels_;
    l.emplace_back("path", std::to_string(p));
    sink.gauge("rdma_probe_pair_window_path_lost",
               std::string("UD probes without a reply in time, by path (the flow label the "
                           "request was sent with; paths that lost one only)") +
                   window,
               std::move(l), static_cast<double>(paths[p]));
  }
}

bool SeriesStats::failing(ProbeClock::time_point now) const {
  const std::lock_guard lock(mutex_);
  return window_.failing(now);
}

std::shared_ptr<SeriesStats> ProbeStats::series(const Labels& labels, SeriesShape shape) {
  const std::lock_guard lock(mutex_);
  auto& slot = series_[{labels, shape}];
  if (!slot) slot = std::make_shared<SeriesStats>(labels, shape);
  return slot;
}

HistogramStats::HistogramStats(std::string name, std::string help, Labels labels)
    : name_(std::move(name)),
      help_(std::move(help)),
      labels_(std::move(labels)),
      histogram_(latency_buckets()) {}

void HistogramStats::add_metrics(MetricSink& sink) const {
  sink.histogram(name_, help_, labels_, histogram_.Collect());
}

std::shared_ptr<HistogramStats> ProbeStats::histogram(const std::string& name,
                                                      const std::string& help,
                                                      const Labels& labels) {
  const std::lock_guard lock(mutex_);
  auto& slot = histograms_[{name, labels}];
  if (!slot) slot = std::make_shared<HistogramStats>(name, help, labels);
  return slot;
}

void ProbeStats::retain_histograms(const std::vector<std::shared_ptr<HistogramStats>>& keep) {
  const std::lock_guard lock(mutex_);
  keep_only(histograms_, keep);
}

std::shared_ptr<ScopeStats> ProbeStats::scope(const Labels& labels) {
  const std::lock_guard lock(mutex_);
  auto& slot = scopes_[labels];
  if (!slot) slot = std::make_shared<ScopeStats>(labels);
  return slot;
}

void ProbeStats::retain_scopes(const std::vector<std::shared_ptr<ScopeStats>>& keep) {
  const std::lock_guard lock(mutex_);
  keep_only(scopes_, keep);
}

void UdPortStats::dropped(const char* why) {
  const std::lock_guard lock(mutex_);
  ++dropped_[why];
}

void UdPortStats::answered() {
  const std::lock_guard lock(mutex_);
  ++answered_;
}

const char* prober_scope_name(ProberScope scope) {
  return scope == ProberScope::group ? "group" : "remote";
}

void UdPortStats::request(ProberScope scope, uint64_t expected) {
  const std::lock_guard lock(mutex_);
  expected_[static_cast<std::size_t>(scope)] += expected;
  ++received_[static_cast<std::size_t>(scope)];
}

void UdPortStats::set_peers(std::size_t group, std::size_t remote) {
  const std::lock_guard lock(mutex_);
  peers_ = {group, remote};
}

void UdPortStats::set_address_handles(std::size_t n) {
  const std::lock_guard lock(mutex_);
  address_handles_ = n;
}

void UdPortStats::add_metrics(MetricSink& sink) const {
  const std::lock_guard lock(mutex_);
  for (const ProberScope scope : {ProberScope::group, ProberScope::remote}) {
    const auto i = static_cast<std::size_t>(scope);
    Labels l = labels_;
    l.emplace_back("scope", prober_scope_name(scope));
    sink.gauge("rdma_probe_ud_peers",
               "Probers admitted to the port's UD queue pair (one per open UD session's queue "
               "pair), by scope: group (a port of a host of this host's group), remote.",
               l, static_cast<double>(peers_[i]));
    sink.counter("rdma_probe_ud_requests_expected_total",
                 "UD probe requests of admitted probers that their sequence numbers say were sent "
                 "to this port, by the probers' scope: with rdma_probe_ud_requests_received_total, "
                 "the loss on the way in.",
                 l, static_cast<double>(expected_[i]));
    sink.counter("rdma_probe_ud_requests_received_total",
                 "UD probe requests of admitted probers this port received, by the probers' scope.",
                 std::move(l), static_cast<double>(received_[i]));
  }
  sink.gauge("rdma_probe_ud_address_handles",
             "Address handles the port's UD queue pair holds (cached, or waiting for their sends "
             "to complete).",
             labels_, static_cast<double>(address_handles_));
  sink.counter("rdma_probe_ud_answered_total", "UD probe requests the port answered.", labels_,
               static_cast<double>(answered_));
  for (const auto& [why, n] : dropped_) {
    Labels l = labels_;
    l.emplace_back("reason", why);
    sink.counter("rdma_probe_ud_dropped_total",
                 "Datagrams the port's UD queue pair dropped or could not send, by reason "
                 "(not_admitted: a request from a prober without an open session).",
                 std::move(l), static_cast<double>(n));
  }
}

std::shared_ptr<UdPortStats> ProbeStats::ud_port(const Labels& labels) {
  const std::lock_guard lock(mutex_);
  auto& slot = ud_ports_[labels];
  if (!slot) slot = std::make_shared<UdPortStats>(labels);
  return slot;
}

void ProbeStats::retain_ud_ports(const std::vector<std::shared_ptr<UdPortStats>>& keep) {
  const std::lock_guard lock(mutex_);
  keep_only(ud_ports_, keep);
}

void ProbeStats::set_pinglist(const PinglistReport& report) {
  const std::lock_guard lock(mutex_);
  pinglist_ = report;
}

void ProbeStats::retain(const std::vector<std::shared_ptr<SeriesStats>>& keep,
                        ProbeClock::time_point now) {
  const std::lock_guard lock(mutex_);
  // Every class of a failing pair, so that its window gauges stay whole.
  keep_only(series_, keep, [failing = failing_pairs(now)](const SeriesStats& s) {
    return !s.shape().counters && failing.contains(s.pair());
  });
}

std::set<std::string> ProbeStats::failing_pairs(ProbeClock::time_point now) const {
  std::set<std::string> failing;
  for (const auto& [key, s] : series_) {
    if (s->failing(now)) failing.insert(s->pair());
  }
  return failing;
}

void TargetStats::answered(std::size_t ports) {
  const std::lock_guard lock(mutex_);
  up_ = true;
  ports_ = ports;
}

void TargetStats::failed(const std::string& why) {
  const std::lock_guard lock(mutex_);
  up_ = false;
  ++errors_[why];
}

void TargetStats::add_metrics(MetricSink& sink) const {
  const std::lock_guard lock(mutex_);
  sink.gauge("rdma_probe_target_up",
             "1 when the target's probe control port answered the last discovery (a hello "
             "listing its ports).",
             labels_, up_ ? 1.0 : 0.0);
  sink.gauge("rdma_probe_target_ports",
             "RDMA ports the target answered probes on, at its last answer.", labels_,
             static_cast<double>(ports_));
  for (const auto& [why, n] : errors_) {
    Labels l = labels_;
    l.emplace_back("reason", why);
    sink.counter("rdma_probe_discovery_errors_total",
                 "Failed discoveries of the target's ports, by reason.", std::move(l),
                 static_cast<double>(n));
  }
}

std::shared_ptr<TargetStats> ProbeStats::target(const Labels& labels) {
  const std::lock_guard lock(mutex_);
  auto& slot = targets_by_labels_[labels];
  if (!slot) slot = std::make_shared<TargetStats>(labels);
  return slot;
}

void ProbeStats::retain_targets(const std::vector<std::shared_ptr<TargetStats>>& keep) {
  const std::lock_guard lock(mutex_);
  keep_only(targets_by_labels_, keep);
}

void ProbeStats::set_local(std::vector<DeviceReport> devices, std::vector<PortReport> ports,
                           const std::string& memory) {
  const std::lock_guard lock(mutex_);
  devices_ = std::move(devices);
  ports_ = std::move(ports);
  memory_ = memory;
}

void ProbeStats::device_released(const std::string& device, const std::string& why) {
  const std::lock_guard lock(mutex_);
  ++released_[{device, why}];
}

void ProbeStats::set_targets(const std::map<std::string, int>& by_source) {
  const std::lock_guard lock(mutex_);
  targets_ = by_source;
}

void ProbeStats::file_sd_read(bool ok) {
  const std::lock_guard lock(mutex_);
  file_sd_ok_ = ok;
  if (!ok) ++file_sd_failures_;
}

void ProbeStats::responder_session_opened() {
  const std::lock_guard lock(mutex_);
  ++sessions_;
}

void ProbeStats::responder_session_closed(bool idle) {
  const std::lock_guard lock(mutex_);
  --sessions_;
  if (idle) ++idle_closed_;
}

void ProbeStats::responder_rejected(const std::string& why) {
  const std::lock_guard lock(mutex_);
  ++rejected_[why];
}

void ProbeStats::add_device_metrics(MetricSink& sink) const {
  static constexpr const char* kDeviceStates[] = {device_state::in_use, device_state::excluded,
                                                  device_state::failed, device_state::gone};
  for (const auto& d : devices_) {
    if (d.state == device_state::in_use) {
      sink.info("rdma_probe_device_info",
                "A device the probe uses, whether its queue pairs live in a thread domain, "
                "where latencies are timed, and the probe memory.",
                {{"device", d.device},
                 {"domain", d.thread_domain ? "thread_domain" : "pd"},
                 {"clock", d.timestamps ? "completion_timestamp" : "host"},
                 {"memory", memory_}});
    }
    for (const char* state : kDeviceStates) {
      sink.gauge("rdma_probe_device_state",
                 "1 for the state each RDMA device of the host is in for the probe: in_use, "
                 "excluded (by probe.device), failed (cannot be opened) or gone (left while in "
                 "use; probing resumes when it returns).",
                 {{"device", d.device}, {"state", state}}, d.state == state ? 1.0 : 0.0);
    }
  }
  for (const auto& [key, n] : released_) {
    sink.counter("rdma_probe_device_releases_total",
                 "Times the probe let go of a device because it left (removed from the "
                 "device list, a fatal event), by reason.",
                 {{"device", key.first}, {"reason", key.second}}, static_cast<double>(n));
  }
}

void ProbeStats::add_port_metrics(MetricSink& sink) const {
  static constexpr const char* kPortStates[] = {port_state::probing, port_state::down,
                                                port_state::excluded, port_state::inactive,
                                                port_state::no_gid};
  for (const auto& p : ports_) {
    const std::string port = std::to_string(p.port);
    for (const char* state : kPortStates) {
      sink.gauge("rdma_probe_port_state",
                 "1 for the state each port of a device in use is in for the probe: probing, "
                 "down (in use, link not active), excluded (by probe.port or "
                 "probe.link_layer), inactive (never active yet) or no_gid.",
                 {{"device", p.device}, {"port", port}, {"state", state}},
                 p.state == state ? 1.0 : 0.0);
    }
    if (!p.rail.empty()) {
      sink.info("rdma_probe_port_rail_info", "The rail of each port the probe uses.",
                {{"device", p.device}, {"port", port}, {"rail", p.rail}});
    }
  }
}

void ProbeStats::add_target_metrics(MetricSink& sink) const {
  for (const auto& [source, n] : targets_) {
    sink.gauge("rdma_probe_targets", "Targets being probed, by where they were configured.",
               {{"source", source}}, n);
  }
  sink.gauge("rdma_probe_file_sd_last_read_successful",
             "0 when the last read of a file_sd file failed (its previous targets are kept).", {},
             file_sd_ok_ ? 1.0 : 0.0);
  sink.counter("rdma_probe_file_sd_failures_total", "Failed reads of file_sd files.", {},
               static_cast<double>(file_sd_failures_));
}

void ProbeStats::add_responder_metrics(MetricSink& sink) const {
  sink.gauge("rdma_probe_responder_sessions", "Probe sessions the responder is serving.", {},
             sessions_);
  sink.counter("rdma_probe_responder_idle_closed_total",
               "Responder sessions closed because the prober stayed silent too long.", {},
               static_cast<double>(idle_closed_));
  for (const auto& [why, n] : rejected_) {
    sink.counter("rdma_probe_responder_rejected_total",
                 "Control connections the responder refused or closed, by reason.",
                 {{"reason", why}}, static_cast<double>(n));
  }
}

void ProbeStats::add_pinglist_metrics(MetricSink& sink) const {
  if (!pinglist_) return;
  const PinglistReport& p = *pinglist_;
  sink.gauge("rdma_probe_pinglist_hosts",
             "Target hosts probed in the current epoch: every host of this host's group, and "
             "the hosts of other groups the pinglist picked.",
             {{"scope", "group"}}, static_cast<double>(p.group_hosts));
  sink.gauge("rdma_probe_pinglist_hosts", "", {{"scope", "remote"}},
             static_cast<double>(p.remote_hosts));
  sink.gauge("rdma_probe_pinglist_fleet_hosts", "Hosts in the target list.", {},
             static_cast<double>(p.fleet_hosts));
  sink.gauge("rdma_probe_pinglist_epoch",
             "The pinglist's epoch: Unix time divided by probe.pinglist.epoch.", {},
             static_cast<double>(p.epoch));
  sink.info(
      "rdma_probe_pinglist_info",
      "This host's group in the pinglist, its address as other hosts' probe series name "
      "it (their target label), and whether it found itself in the target list "
      "(listed=\"false\": the group is probe.pinglist.group).",
      {{"group", p.group}, {"address", p.address}, {"listed", p.self_listed ? "true" : "false"}});
}

void ProbeStats::add_metrics(MetricSink& sink, ProbeClock::time_point now) const {
  stalls_->add_metrics(sink);
  std::vector<std::shared_ptr<SeriesStats>> series;
  std::vector<std::shared_ptr<TargetStats>> targets;
  std::vector<std::shared_ptr<HistogramStats>> histograms;
  std::vector<std::shared_ptr<UdPortStats>> ud_ports;
  std::vector<std::shared_ptr<ScopeStats>> scopes;
  // A pair's window gauges come with every class probing it, once one of
  // them fails: a class without them is one that does not probe it.
  std::set<std::string> failing;
  {
    // The probe's own state under the lock; the per-series objects (each
    // with a lock of its own) after it.
    const std::lock_guard lock(mutex_);
    add_device_metrics(sink);
    add_port_metrics(sink);
    add_target_metrics(sink);
    add_responder_metrics(sink);
    add_pinglist_metrics(sink);
    for (const auto& [labels, s] : series_) series.push_back(s);
    for (const auto& [labels, t] : targets_by_labels_) targets.push_back(t);
    for (const auto& [key, h] : histograms_) histograms.push_back(h);
    for (const auto& [labels, u] : ud_ports_) ud_ports.push_back(u);
    for (const auto& [labels, sc] : scopes_) scopes.push_back(sc);
    failing = failing_pairs(now);
  }
  for (const auto& t : targets) t->add_metrics(sink);
  for (const auto& s : series) s->add_metrics(sink, now, failing.contains(s->pair()));
  for (const auto& h : histograms) h->add_metrics(sink);
  for (const auto& u : ud_ports) u->add_metrics(sink);
  for (const auto& sc : scopes) sc->add_metrics(sink, now);
}

}  // namespace rdma_exporter::probe
