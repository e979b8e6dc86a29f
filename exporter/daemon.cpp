#include "exporter/daemon.hpp"

#include <boost/asio/post.hpp>
#include <chrono>
#include <csignal>
#include <future>

#include "collectors/sysfs/sysfs_collector.hpp"
#include "common/log.hpp"
#include "exporter/build_info.hpp"
#include "exporter/otlp/pusher.hpp"
#include "exporter/probe/probe.hpp"
#include "exporter/probe_collector.hpp"
#include "exporter/process_metrics.hpp"
#include "exporter/systemd.hpp"

namespace rdma_exporter {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

// Outcome of configuration reloads, for self metrics.
struct ReloadStatus {
  std::atomic<bool> successful{true};
  std::atomic<double> success_timestamp{0};

  void add_metrics(MetricSink& sink) const {
    sink.gauge("rdma_exporter_config_last_reload_successful",
               "1 when the last configuration reload succeeded (or none was tried).", {},
               successful ? 1.0 : 0.0);
    sink.gauge("rdma_exporter_config_last_reload_success_timestamp_seconds",
               "When the configuration was last loaded successfully (start or reload), in "
               "seconds since the epoch.",
               {}, success_timestamp);
  }
};

Daemon::Daemon(const CommandLine& cli, const Config& config,
               std::shared_ptr<const WebSecurity> security)
    : cli_(cli),
      config_(config),
      security_(std::move(security)),
      collection_(config_),
      cache_(io_, collection_, config_.collection.max_age),
      server_(io_, config_.web, cache_, security_),
      signals_(io_, SIGINT, SIGTERM, SIGHUP),
      deadline_(io_),
      watchdog_(io_),
      reload_status_(std::make_shared<ReloadStatus>()) {
  reload_status_->success_timestamp = now_seconds();
  // --web.disable-exporter-metrics leaves out what node_exporter's leaves
  // out: the process's metrics and the HTTP handler's (docs/configuration.md).
  if (!cli_.disable_exporter_metrics) {
    collection_.add_self_metrics(
        [stats = server_.stats()](MetricSink& sink) { stats->add_metrics(sink); });
  }
  collection_.add_self_metrics(
      [status = reload_status_](MetricSink& sink) { status->add_metrics(sink); });
  collection_.add_self_metrics(add_sysfs_file_metrics);
  if (!cli_.disable_exporter_metrics) {
    collection_.add_self_metrics([process = std::make_shared<ProcessMetrics>()](MetricSink& sink) {
      process->add_metrics(sink);
    });
  }
  server_.set_reload_hook([this](const ReloadDone& done) { reload(done); });
}

Daemon::~Daemon() = default;

// OTLP push, on a thread of its own. It asks the event loop for a snapshot
// (the same single-flight cache the scrapes use) and waits at most
// otlp.timeout for it, so it never outlives a stopped loop.
void Daemon::start_otlp() {
  const Duration wait = config_.otlp.timeout;
  pusher_ =
      std::make_shared<OtlpPusher>(config_.otlp, [this, wait]() -> std::shared_ptr<const Snapshot> {
        auto promise = std::make_shared<std::promise<std::shared_ptr<const Snapshot>>>();
        auto future = promise->get_future();
        boost::asio::post(io_, [this, promise] {
          cache_.get(
              [promise](std::shared_ptr<const Snapshot> s) { promise->set_value(std::move(s)); });
        });
        const auto limit = std::chrono::steady_clock::now() + wait;
        while (future.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
          if (io_.stopped() || std::chrono::steady_clock::now() >= limit) return nullptr;
        }
        try {
          return future.get();
        } catch (const std::future_error&) {
          return nullptr;
        }
      });
  collection_.add_self_metrics([pusher = pusher_](MetricSink& sink) { pusher->add_metrics(sink); });
}

// The latency probe, on its own thread, accounted like a collector.
Status Daemon::start_probe() {
  prober_ = std::make_shared<probe::ProbeService>(config_.probe);
  if (Status s = prober_->start(); !s) return Error{s.error().code, "probe: " + s.error().message};
  collection_.add_collector(std::make_unique<ProbeCollector>(prober_));
  return ok_status();
}

// What a reload read, and what was wrong with it.
struct ReloadRead {
  Config config;
  std::shared_ptr<const WebSecurity> security;
  std::vector<std::string> errors;
};

namespace {

// What a reload reads: the configuration file, the web configuration file
// and its certificates (a broken one rejects the reload like a broken
// configuration file), and the probe's secret (a file that cannot be used
// keeps the secrets in force). On the reader's thread.
ReloadRead read_for_reload(const CommandLine& cli) {
  ReloadRead read;
  read.errors = load_config(cli, read.config);
  if (read.errors.empty()) {
    read.errors = load_web_security(read.config.web.config_file, read.security);
  }
  const probe::ProbeOptions& probe = read.config.probe;
  if (read.errors.empty() && probe.enabled && !probe.secret_file.empty()) {
    if (auto secret = probe::read_secret_file(probe.secret_file); !secret) {
      read.errors.push_back(secret.error().message);
    }
  }
  return read;
}

}  // namespace

// Reads and checks the files off the event loop; an invalid file changes
// nothing. A valid one is applied between collections, keeping counters,
// per-QP series and bindings.
void Daemon::reload(const ReloadDone& reload_done) {
  systemd::notify(systemd::reloading_state());
  // Whatever the outcome, the daemon serves again afterwards.
  const ReloadDone done = [this, reload_done](bool ok, std::string message) {
    if (!stopping_) systemd::notify("READY=1\nSTATUS=" + message);
    reload_done(ok, std::move(message));
  };
  reader_.run([cli = cli_] { return read_for_reload(cli); },
              [this, done](const ReloadRead& read) { apply_reload(read, done); });
}

void Daemon::apply_reload(const ReloadRead& read, const ReloadDone& done) {
  if (stopping_) {
    done(false, "reload not applied: the exporter is stopping");
    return;
  }
  if (!read.errors.empty()) {
    reject_reload(read.errors, done);
    return;
  }
  const Config& next = read.config;
  warn_start_only(next);
  if (prober_ && next.probe.enabled == config_.probe.enabled) {
    if (next.probe != config_.probe) {
      prober_->update(next.probe);
    } else {
      // The secret file's content may have changed under the same name.
      prober_->reload_secret(next.probe.secret_file, next.probe.secret_grace);
    }
  }
  cache_.run_exclusive([next](Collection& c) { c.reconfigure(next); },
                       [this, next, next_security = read.security, done] {
                         config_ = next;
                         apply_log_level(config_);
                         server_.update_config(config_.web);
                         server_.update_security(next_security);
                         if (!config_.web.config_file.empty()) {
                           log::info("web configuration",
                                     {
                                         {"path", config_.web.config_file},
                                         {"security", next_security->describe()},
                                     });
                         }
                         cache_.set_max_age(config_.collection.max_age);
                         cache_.start_maintenance(collection_.maintenance_interval());
                         reload_status_->successful = true;
                         reload_status_->success_timestamp = now_seconds();
                         cache_.invalidate();
                         log::info("configuration reloaded");
                         done(true, "configuration reloaded");
                       });
}

void Daemon::reject_reload(const std::vector<std::string>& errors, const ReloadDone& done) {
  // The state first, then the word: whoever reads the log line and then
  // scrapes sees the reload failed.
  reload_status_->successful = false;
  cache_.invalidate();  // a collection in flight may have read the old state
  for (const auto& e : errors) log::error("reload rejected", {{"err", e}});
  done(false,
       "reload rejected, configuration kept: " + errors.front() +
           (errors.size() > 1 ? " (and " + std::to_string(errors.size() - 1) + " more)" : ""));
}

void Daemon::warn_start_only(const Config& next) const {
  if (next.web.listen_addresses != config_.web.listen_addresses) {
    log::warn("reload: web.listen_address changes take effect at the next start");
  }
  if (next.collection.netlink_timeout != config_.collection.netlink_timeout) {
    log::warn("reload: collection.netlink_timeout changes take effect at the next start");
  }
  if (next.otlp != config_.otlp) log::warn("reload: otlp changes take effect at the next start");
  if (next.probe.enabled != config_.probe.enabled) {
    log::warn("reload: turning the probe on or off takes effect at the next start");
  }
}

void Daemon::wait_for_signal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    if (sig == SIGHUP) {
      log::info("SIGHUP: reloading the configuration");
      reload([](bool, const std::string&) {});
      wait_for_signal();
      return;
    }
    shut_down(sig);
  });
}

void Daemon::shut_down(int sig) {
  log::info("received a signal, finishing requests in flight",
            {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
  stopping_ = true;
  systemd::notify("STOPPING=1\nSTATUS=finishing requests in flight");
  watchdog_.cancel();
  signals_.cancel();
  // Requests in flight get a bounded time to finish.
  deadline_.expires_after(config_.web.write_timeout + config_.web.read_timeout);
  deadline_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) {
      log::warn("shutdown deadline reached; closing remaining connections");
      io_.stop();
    }
  });
  server_.stop([this] { deadline_.cancel(); });
  if (pusher_) pusher_->request_stop();
  cache_.stop([](Collection& c) { c.restore_kernel_state(); });
}

void Daemon::schedule_watchdog() {
  watchdog_.expires_after(watchdog_period_);
  watchdog_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    // Through the collecting thread and back: a wedged collection or event
    // loop stops the pings, and systemd restarts the service.
    cache_.run_exclusive([](Collection&) {},
                         [this] {
                           if (stopping_) return;
                           systemd::notify("WATCHDOG=1");
                           schedule_watchdog();
                         });
  });
}

int Daemon::run() {
  if (config_.otlp.enabled) start_otlp();
  if (config_.probe.enabled) {
    if (Status s = start_probe(); !s) {
      log::error("starting the probe failed", {{"err", s.error().message}});
      return 1;
    }
  }
  // Signals are caught before the server announces itself, so a supervisor
  // that signals right after the "listening" line is never too early.
  wait_for_signal();
  Status started = ok_status();
  if (cli_.systemd_socket) {
    auto fds = systemd::listen_fds();
    started = fds ? server_.start(*fds) : Status(fds.error());
  } else {
    started = server_.start();
  }
  if (!started) {
    log::error("starting the HTTP server failed", {{"err", started.error().message}});
    systemd::notify("STATUS=" + started.error().message);
    return 1;
  }
  if (collection_.manages_kernel_state()) {
    cache_.start_maintenance(collection_.maintenance_interval());
  }
  if (pusher_) pusher_->start();
  if (!config_.web.config_file.empty()) {
    log::info("web configuration",
              {{"path", config_.web.config_file}, {"security", security_->describe()}});
  }
  // One line per listener.
  const auto endpoints = server_.local_endpoints();
  for (const auto& ep : endpoints) {
    const auto address = ep.address();
    const std::string host = address.is_v6() && !address.to_v6().is_v4_mapped()
                                 ? "[" + address.to_string() + "]"
                                 : address.to_string();
    log::info("listening on", {{"address", host + ":" + std::to_string(ep.port())},
                               {"tls", server_.serves_tls()},
                               {"systemd_socket", cli_.systemd_socket},
                               {"version", exporter_version()}});
  }
  // Ready once a scrape would be answered from a finished collection,
  // whichever asked for it first: this get, a scrape or the OTLP pusher.
  cache_.when_first_collected([this, listeners = endpoints.size()] {
    if (stopping_) return;
    log::debug("first collection done; ready");
    systemd::notify("READY=1\nSTATUS=serving metrics on " + std::to_string(listeners) +
                    " listener(s)");
  });
  cache_.get([](const std::shared_ptr<const Snapshot>&) {});
  if (auto timeout = systemd::watchdog_timeout()) {
    watchdog_period_ = *timeout / 2;
    log::info("systemd watchdog enabled",
              {{"interval_ms", std::to_string(watchdog_period_.count() / 1000)}});
    schedule_watchdog();
  }

  io_.run();
  // A reload still reading is left to the reader's thread.
  reader_.stop();
  if (pusher_) pusher_->stop();
  if (prober_) prober_->stop();
  log::info("stopped");
  return 0;
}

}  // namespace rdma_exporter
