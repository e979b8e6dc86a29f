#pragma once

#include <sys/stat.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collectors/probe/health.hpp"
#include "collectors/probe/options.hpp"
#include "collectors/probe/stats.hpp"
#include "common/metric_sink.hpp"
#include "common/result.hpp"

namespace rdma_exporter::probe {

class Device;
class Prober;
class Responder;

// The embedded latency probe: a responder for peers and a prober for every
// target and class, on an event loop and thread of their own so that
// rendering a scrape never delays the timing of a probe.
class ProbeService {
 public:
  explicit ProbeService(ProbeOptions options);
  ~ProbeService();
  ProbeService(const ProbeService&) = delete;
  ProbeService& operator=(const ProbeService&) = delete;

  // Binds the responder's port and starts the thread. Fails when the secret
  // file is unreadable or the port cannot be bound; a missing RDMA device is
  // not fatal (it is looked for again until it appears).
  Status start();
  void stop();

  // Reload: new targets, classes and their settings take effect at once;
  // device, listen address, secret and limits at the next start.
  void update(ProbeOptions options);

  // A collector's shape: adds the probe's metrics and returns what makes the
  // probe itself unhealthy right now (see ProbeHealth), empty when it works.
  // A target that does not answer is not a problem of the probe. Safe to
  // call from any thread.
  std::vector<std::string> collect(MetricSink& sink) const;

  // Returns once the probe's loop has run what was asked of it before: the
  // first device and file_sd look-ups after start(), an update(). Returns at
  // once when the loop is not running. Not for the probe's own thread.
  void settle();

 private:
  struct FileState {
    bool seen = false;     // read at the current stat
    bool missing = false;  // the last stat failed
    struct stat st {};
    std::vector<Target> targets;
  };

  void open_device();
  void refresh_files();
  void apply();

  ProbeOptions options_;
  std::string secret_;
  std::shared_ptr<ProbeStats> stats_ = std::make_shared<ProbeStats>();
  ProbeHealth health_;
  std::atomic<bool> loop_running_{false};
  boost::asio::io_context io_;
  boost::asio::steady_timer device_timer_{io_};
  boost::asio::steady_timer files_timer_{io_};
  std::shared_ptr<Device> device_;
  std::unique_ptr<Responder> responder_;
  std::map<std::string, FileState> files_;
  std::map<std::string, std::shared_ptr<Prober>> probers_;  // by target, class and labels
  bool device_warned_ = false;
  unsigned short port_ = 0;
  std::thread thread_;
};

// Labels of a target probed with a class: target, op, size, tclass, then
// the target's own.
Labels series_labels(const std::string& target, const ProbeClass& cls,
                     const std::map<std::string, std::string>& target_labels);

}  // namespace rdma_exporter::probe
