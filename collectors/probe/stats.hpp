#pragma once

#include <prometheus/histogram.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/metric_sink.hpp"

// What the probe has measured, shared between the probe's event loop (which
// writes) and the collecting thread (which reads). collectors/probe's metrics
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
}  // namespace reason

// One target probed with one class.
class SeriesStats {
 public:
  explicit SeriesStats(Labels labels);

  void sent();
  void success(double seconds, double unix_now);
  void timeout();
  void error(const std::string& why);

  void add_metrics(MetricSink& sink) const;
  const Labels& labels() const { return labels_; }

 private:
  const Labels labels_;
  prometheus::Histogram latency_;
  mutable std::mutex mutex_;
  uint64_t sent_ = 0;
  uint64_t timeouts_ = 0;
  std::map<std::string, uint64_t> errors_;
  bool up_ = false;
  double last_success_ = 0;
};

// Everything the probe exports.
class ProbeStats {
 public:
  // The series of a target and class, made on first use. Its labels are
  // fixed by its key: a target whose labels change gets a new series.
  std::shared_ptr<SeriesStats> series(const Labels& labels);
  // Series not in `keep` stop being exported.
  void retain(const std::vector<std::shared_ptr<SeriesStats>>& keep);

  void set_device(const std::string& device, bool thread_domain, bool timestamps,
                  const std::string& memory);
  void set_targets(const std::map<std::string, int>& by_source);
  void file_sd_read(bool ok);

  void responder_session_opened();
  void responder_session_closed(bool idle);
  void responder_rejected(const std::string& why);

  void add_metrics(MetricSink& sink) const;

 private:
  mutable std::mutex mutex_;
  std::map<Labels, std::shared_ptr<SeriesStats>> series_;
  Labels device_labels_;  // empty until the device opens
  std::map<std::string, int> targets_;
  uint64_t file_sd_failures_ = 0;
  bool file_sd_ok_ = true;
  int sessions_ = 0;
  uint64_t idle_closed_ = 0;
  std::map<std::string, uint64_t> rejected_;
};

}  // namespace rdma_exporter::probe
