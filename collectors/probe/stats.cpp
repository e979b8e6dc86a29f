#include "collectors/probe/stats.hpp"

#include <algorithm>
#include <set>

namespace rdma_exporter::probe {

std::vector<double> latency_buckets() {
  return {1e-6,   2.5e-6, 5e-6, 1e-5,   2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3,
          2.5e-3, 5e-3,   1e-2, 2.5e-2, 5e-2,   0.1,  0.25, 0.5,    1.0};
}

SeriesStats::SeriesStats(Labels labels) : labels_(std::move(labels)), latency_(latency_buckets()) {}

void SeriesStats::sent() {
  const std::lock_guard lock(mutex_);
  ++sent_;
}

void SeriesStats::success(double seconds, double unix_now) {
  latency_.Observe(seconds);
  const std::lock_guard lock(mutex_);
  up_ = true;
  last_success_ = unix_now;
}

void SeriesStats::timeout() {
  const std::lock_guard lock(mutex_);
  ++timeouts_;
  up_ = false;
}

void SeriesStats::error(const std::string& why) {
  const std::lock_guard lock(mutex_);
  ++errors_[why];
  up_ = false;
}

void SeriesStats::add_metrics(MetricSink& sink) const {
  prometheus::MetricFamily hist;
  hist.name = "rdma_probe_latency_seconds";
  hist.help = "Round-trip time of successful probes (see docs/probe.md for perftest's numbers).";
  hist.type = prometheus::MetricType::Histogram;
  prometheus::ClientMetric m = latency_.Collect();
  for (const auto& [k, v] : labels_) m.label.push_back({k, v});
  hist.metric.push_back(std::move(m));
  sink.family(std::move(hist));

  const std::lock_guard lock(mutex_);
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
  sink.gauge("rdma_probe_up", "1 when the target's last probe of this class succeeded.", labels_,
             up_ ? 1.0 : 0.0);
  if (last_success_ > 0) {
    sink.gauge("rdma_probe_last_success_timestamp_seconds",
               "Unix time of the last successful probe.", labels_, last_success_);
  }
}

std::shared_ptr<SeriesStats> ProbeStats::series(const Labels& labels) {
  const std::lock_guard lock(mutex_);
  auto& slot = series_[labels];
  if (!slot) slot = std::make_shared<SeriesStats>(labels);
  return slot;
}

void ProbeStats::retain(const std::vector<std::shared_ptr<SeriesStats>>& keep) {
  const std::set<const SeriesStats*> wanted = [&] {
    std::set<const SeriesStats*> s;
    for (const auto& k : keep) s.insert(k.get());
    return s;
  }();
  const std::lock_guard lock(mutex_);
  std::erase_if(series_, [&](const auto& kv) { return !wanted.contains(kv.second.get()); });
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
  std::set<const TargetStats*> wanted;
  for (const auto& k : keep) wanted.insert(k.get());
  const std::lock_guard lock(mutex_);
  std::erase_if(targets_by_labels_,
                [&](const auto& kv) { return !wanted.contains(kv.second.get()); });
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

void ProbeStats::add_metrics(MetricSink& sink) const {
  std::vector<std::shared_ptr<SeriesStats>> series;
  std::vector<std::shared_ptr<TargetStats>> targets;
  {
    const std::lock_guard lock(mutex_);
    static constexpr const char* kDeviceStates[] = {device_state::in_use, device_state::excluded,
                                                    device_state::failed, device_state::gone};
    static constexpr const char* kPortStates[] = {port_state::probing, port_state::down,
                                                  port_state::excluded, port_state::inactive,
                                                  port_state::no_gid};
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
    for (const auto& [key, n] : released_) {
      sink.counter("rdma_probe_device_releases_total",
                   "Times the probe let go of a device because it left (removed from the "
                   "device list, a fatal event), by reason.",
                   {{"device", key.first}, {"reason", key.second}}, static_cast<double>(n));
    }
    for (const auto& [source, n] : targets_) {
      sink.gauge("rdma_probe_targets", "Targets being probed, by where they were configured.",
                 {{"source", source}}, n);
    }
    sink.gauge("rdma_probe_file_sd_last_read_successful",
               "0 when the last read of a file_sd file failed (its previous targets are kept).", {},
               file_sd_ok_ ? 1.0 : 0.0);
    sink.counter("rdma_probe_file_sd_failures_total", "Failed reads of file_sd files.", {},
                 static_cast<double>(file_sd_failures_));
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
    for (const auto& [labels, s] : series_) series.push_back(s);
    for (const auto& [labels, t] : targets_by_labels_) targets.push_back(t);
  }
  for (const auto& t : targets) t->add_metrics(sink);
  for (const auto& s : series) s->add_metrics(sink);
}

}  // namespace rdma_exporter::probe
