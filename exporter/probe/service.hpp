#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/background_reader.hpp"
#include "common/metric_sink.hpp"
#include "common/result.hpp"
#include "exporter/probe/control/discovery.hpp"
#include "exporter/probe/local_ports/tracker.hpp"
#include "exporter/probe/plan/epoch.hpp"
#include "exporter/probe/plan/file_sd.hpp"
#include "exporter/probe/plan/options.hpp"
#include "exporter/probe/plan/probers.hpp"
#include "exporter/probe/plan/rails.hpp"
#include "exporter/probe/probers/ud_prober.hpp"
#include "exporter/probe/stats/health.hpp"
#include "exporter/probe/stats/stats.hpp"
#include "exporter/probe/ud/attach.hpp"
#include "exporter/probe/wire/auth.hpp"
#include "exporter/probe/wire/protocol.hpp"

namespace rdma_exporter::probe {

class ControlClient;
class Responder;

// The embedded latency probe: a responder for peers on every local port,
// and a prober for every pair of a local port and a target's port on the
// same rail, and every class, on an event loop and thread of their own so
// that rendering a scrape never delays the timing of a probe.
//
// Devices come and go: local_ports/tracker.hpp says how they are followed.
class ProbeService {
 public:
  explicit ProbeService(ProbeOptions options);
  ~ProbeService();
  ProbeService(const ProbeService&) = delete;
  ProbeService& operator=(const ProbeService&) = delete;

  // Binds the responder's port and starts the thread. Fails when the secret
  // file is unreadable or the port cannot be bound; a missing RDMA device is
  // not fatal (devices are looked for again until they appear).
  Status start();
  void stop();

  // Reload: new targets, classes, ports, rails and discovery settings take
  // effect at once; the listen address, secret, memory, GID index and
  // responder limits at the next start.
  void update(ProbeOptions options);
  // Reads the secret file again (a reload that changed no other probe
  // option): a new secret rotates in, the previous one is kept for `grace`.
  void reload_secret(std::string path, std::chrono::milliseconds grace);

  // A collector's shape: adds the probe's metrics and returns what makes the
  // probe itself unhealthy right now (see ProbeHealth), empty when it works.
  // A target that does not answer is not a problem of the probe. Safe to
  // call from any thread.
  std::vector<std::string> collect(MetricSink& sink) const;

  // Returns once the probe's loop has run what was asked of it before, and
  // taken the files its reader read for it: the first device and file_sd
  // look-ups after start(), an update(), a secret read again. Returns at
  // once when the loop is not running. Not for the probe's own thread.
  void settle();

 private:
  // A target host, asked for its ports.
  struct Watched {
    std::string address;
    std::string name;  // the target label
    Target target;
    std::shared_ptr<Discovery> discovery;
    std::shared_ptr<TargetStats> stats;
    std::vector<wire::PortAd> ports;  // its last answer
    bool failing = false;             // warned about; an answer says so again
    // Local rails it is probed from in this epoch (empty: every rail; a
    // host of another group is probed on the rails that picked it).
    std::set<std::string> rails;
  };

  // The targets wanted and this epoch's picks: discovery started for new
  // targets and stopped for those no longer wanted.
  void watch(const WantedTargets& wanted, const EpochPick& pick);
  Discovery::Handlers discovery_handlers(const WatchKey& key);
  // The probers the plan asks for: kept, made, or stopped.
  void run_probers(const std::string& self_group);
  // On the probe's thread: reads the secret file again, on the reader's
  // thread; a new secret rotates the keyring (the previous one is kept for
  // `grace`), a file that cannot be used keeps the secrets in force.
  void rotate_secret(const std::string& path, std::chrono::milliseconds grace);
  // Rotates to `secret`, read from `path` (none: an empty path).
  void rotate_to(const std::string& path, std::chrono::milliseconds grace, std::string secret);
  void retire_secrets();
  // Plans again: targets, pinglist, discovery and probers.
  void apply();
  void stop_all();
  // Runs apply() at the start of the next pinglist epoch.
  void schedule_epoch();
  // The event loop's heartbeat (StallWatch): checks how late it ran, and
  // runs again kHeartbeat on.
  void heartbeat();

  ProbeOptions options_;
  // The probe's secrets, shared by the responder and every prober; rotated
  // in place on reload.
  std::shared_ptr<Keyring> keyring_ = std::make_shared<Keyring>();
  std::shared_ptr<ProbeStats> stats_ = std::make_shared<ProbeStats>();
  ProbeHealth health_;
  std::atomic<bool> loop_running_{false};
  boost::asio::io_context io_;
  // Reads the file_sd files and the secret file off the event loop.
  BackgroundReader reader_{io_};
  boost::asio::steady_timer grace_timer_{io_};  // a rotation's grace period ends
  boost::asio::steady_timer epoch_timer_{io_};
  boost::asio::steady_timer heartbeat_timer_{io_};
  std::unique_ptr<Responder> responder_;
  UdAttacher ud_ports_;
  DeviceTracker devices_;
  FileSdTargets files_;
  std::map<WatchKey, Watched> watched_;
  // The targets' ports before a reload, until the targets are watched again.
  std::map<WatchKey, std::vector<wire::PortAd>> carried_ports_;
  // Addresses listed more than once with other labels: warned about once.
  std::set<std::string> conflicting_targets_;
  // RC and UD probers, by target, ports, class and labels.
  std::map<ProberKey, std::shared_ptr<ControlClient>> probers_;
  unsigned short port_ = 0;
  std::thread thread_;
};

}  // namespace rdma_exporter::probe
