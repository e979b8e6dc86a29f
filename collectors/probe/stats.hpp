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
  std::shared_ptr<SeriesStats> series(const Labels& labels);
  // Series not in `keep` stop being exported.
  void retain(const std::vector<std::shared_ptr<SeriesStats>>& keep);

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

  void add_metrics(MetricSink& sink) const;

 private:
  mutable std::mutex mutex_;
  std::map<Labels, std::shared_ptr<SeriesStats>> series_;
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
