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

void ProbeStats::set_device(const std::string& device, bool thread_domain, bool timestamps,
                            const std::string& memory) {
  const std::lock_guard lock(mutex_);
  device_labels_ = {{"device", device},
                    {"domain", thread_domain ? "thread_domain" : "pd"},
                    {"clock", timestamps ? "completion_timestamp" : "host"},
                    {"memory", memory}};
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
  {
    const std::lock_guard lock(mutex_);
    if (!device_labels_.empty()) {
      sink.info("rdma_probe_device_info",
                "The device the probe uses, whether its queue pairs live in a thread domain, "
                "where latencies are timed, and the probe memory.",
                device_labels_);
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
  }
  for (const auto& s : series) s->add_metrics(sink);
}

}  // namespace rdma_exporter::probe
