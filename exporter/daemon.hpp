#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/background_reader.hpp"
#include "exporter/cli.hpp"
#include "exporter/collection.hpp"
#include "exporter/config.hpp"
#include "exporter/http/server.hpp"
#include "exporter/snapshot_cache.hpp"

namespace rdma_exporter {

class OtlpPusher;
namespace probe {
class ProbeService;
}
struct ReloadStatus;
struct ReloadRead;

// The exporter as a long-running service. One event loop (the thread that
// calls run()) accepts HTTP, runs timers and catches signals; collections run
// behind the single-flight SnapshotCache; OTLP push and the latency probe
// run on threads of their own. SIGHUP and POST /-/reload reload the
// configuration; SIGINT and SIGTERM finish the requests in flight, restore
// the kernel state the configuration asks to restore, and return.
// Under systemd it listens on the sockets passed to it (--web.systemd-socket)
// and reports through sd_notify: READY=1 once it listens and the first
// collection is done, RELOADING=1 then READY=1 around a reload, STOPPING=1
// on shutdown, and WATCHDOG=1 when the unit sets WatchdogSec=.
class Daemon {
 public:
  Daemon(const CommandLine& cli, const Config& config, std::shared_ptr<const WebSecurity> security);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Serves until a shutdown signal; the process's exit code.
  int run();

 private:
  using ReloadDone = std::function<void(bool, std::string)>;

  void start_otlp();
  Status start_probe();
  // Reads the files on the reader's thread, then applies them on the loop.
  void reload(const ReloadDone& done);
  void apply_reload(const ReloadRead& read, const ReloadDone& done);
  void reject_reload(const std::vector<std::string>& errors, const ReloadDone& done);
  // Warns about the changes that take effect at the next start.
  void warn_start_only(const Config& next) const;
  void wait_for_signal();
  void shut_down(int signal);
  // systemd's watchdog: WATCHDOG=1 every half timeout, once a round trip
  // through the event loop and the collecting thread has completed.
  void schedule_watchdog();

  const CommandLine& cli_;
  Config config_;
  std::shared_ptr<const WebSecurity> security_;
  boost::asio::io_context io_;
  Collection collection_;
  SnapshotCache cache_;
  HttpServer server_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer deadline_;
  boost::asio::steady_timer watchdog_;
  std::chrono::microseconds watchdog_period_{0};
  bool stopping_ = false;
  std::shared_ptr<ReloadStatus> reload_status_;
  // Held by shared_ptr: a collection still running after a forced shutdown
  // may read their metrics.
  std::shared_ptr<OtlpPusher> pusher_;
  std::shared_ptr<probe::ProbeService> prober_;
  // Reads the files of a reload off the event loop.
  BackgroundReader reader_{io_};
};

}  // namespace rdma_exporter
