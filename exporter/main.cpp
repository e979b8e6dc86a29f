// rdma_exporter: Prometheus exporter for the Linux RDMA stack.

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <future>
#include <iostream>

#include "collectors/kernel/netlink/socket_transport.hpp"
#include "collectors/kernel/sysfs/reader.hpp"
#include "collectors/probe/service.hpp"
#include "common/log.hpp"
#include "exporter/build_info.hpp"
#include "exporter/cli.hpp"
#include "exporter/collection.hpp"
#include "exporter/exposition.hpp"
#include "exporter/http/server.hpp"
#include "exporter/otlp/pusher.hpp"
#include "exporter/privileges.hpp"
#include "exporter/snapshot_cache.hpp"

namespace rdma_exporter {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// Says once, at start-up, when this host has no RDMA (or no rdma netlink).
// Later changes are logged by the collection when they happen.
void report_rdma_presence(const Config& config) {
  const Status netlink = netlink::SocketTransport::probe();
  const sysfs::Reader reader(config.sysfs.root);
  if (netlink) return;
  if (!reader.class_dir_exists()) {
    log::warn("no RDMA on this host: " + netlink.error().message + ", and " +
              reader.class_dir().string() +
              " does not exist; serving the exporter's own metrics only");
  } else {
    log::warn("rdma netlink unavailable (" + netlink.error().message +
              "); exporting what sysfs has");
  }
}

std::string render_once(const Snapshot& snap, const std::string& format, const Config& config) {
  if (format == "openmetrics") return render_openmetrics(snap.families);
  if (format == "otlp-json") return encode_otlp_json(snap.families, otlp_context(config.otlp));
  if (format == "json") {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    return render_json(snap.families, snap.outcomes, std::chrono::duration<double>(now).count());
  }
  return snap.text;
}

int run_once(const Config& config, const CommandLine& cli) {
  Collection collection(config);
  collection.maintain();
  auto snapshot = collection.collect();
  collection.restore_kernel_state();
  for (const auto& o : snapshot->outcomes) {
    for (const auto& e : o.errors)
      std::fprintf(stderr, "collector %s: %s\n", o.name.c_str(), e.c_str());
  }
  const std::string body = render_once(*snapshot, cli.format, config);
  if (cli.output) {
    std::string error;
    if (!write_file_atomically(*cli.output, body, error)) {
      std::fprintf(stderr, "writing the metrics failed: %s\n", error.c_str());
      return kExitFailure;
    }
  } else {
    std::fwrite(body.data(), 1, body.size(), stdout);
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
      std::fprintf(stderr, "writing the metrics to stdout failed\n");
      return kExitFailure;
    }
  }
  return snapshot->all_succeeded() && !snapshot->text.empty() ? kExitOk : kExitFailure;
}

// The configuration the command line asks for: the file (if any), then the
// flags over it. One line per problem.
std::vector<std::string> load_config(const CommandLine& cli, Config& config) {
  config = Config{};
  std::vector<std::string> errors;
  if (cli.config_file) errors = load_config_file(*cli.config_file, config);
  if (!errors.empty()) return errors;
  apply_overrides(cli, config);
  return validate_config(config);
}

void apply_log_level(const Config& config) {
  log::Level level = log::Level::info;
  log::parse_level(config.log.level, level);
  log::set_level(level);
}

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

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int serve(const Config& initial, std::shared_ptr<const WebSecurity> security,
          const CommandLine& cli) {
  Config config = initial;
  Collection collection(config);
  boost::asio::io_context io;
  SnapshotCache cache(io, collection, config.collection.max_age);
  HttpServer server(io, config.web, cache, security);
  auto reload_status = std::make_shared<ReloadStatus>();
  reload_status->success_timestamp = now_seconds();
  collection.add_self_metrics(
      [stats = server.stats()](MetricSink& sink) { stats->add_metrics(sink); });
  collection.add_self_metrics(
      [reload_status](MetricSink& sink) { reload_status->add_metrics(sink); });

  // OTLP push, on a thread of its own. It asks the event loop for a snapshot
  // (the same single-flight cache the scrapes use) and waits at most
  // otlp.timeout for it, so it never outlives a stopped loop.
  // Held by shared_ptr: a collection still running after a forced shutdown
  // may read its self metrics.
  std::shared_ptr<OtlpPusher> pusher;
  if (config.otlp.enabled) {
    const Duration wait = config.otlp.timeout;
    pusher = std::make_shared<OtlpPusher>(
        config.otlp, [&io, &cache, wait]() -> std::shared_ptr<const Snapshot> {
          auto promise = std::make_shared<std::promise<std::shared_ptr<const Snapshot>>>();
          auto future = promise->get_future();
          boost::asio::post(io, [&cache, promise] {
            cache.get(
                [promise](std::shared_ptr<const Snapshot> s) { promise->set_value(std::move(s)); });
          });
          const auto limit = std::chrono::steady_clock::now() + wait;
          while (future.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
            if (io.stopped() || std::chrono::steady_clock::now() >= limit) return nullptr;
          }
          try {
            return future.get();
          } catch (const std::future_error&) {
            return nullptr;
          }
        });
    collection.add_self_metrics([pusher](MetricSink& sink) { pusher->add_metrics(sink); });
  }

  // The latency probe, on its own thread. Held by shared_ptr for the same
  // reason as the pusher.
  std::shared_ptr<probe::ProbeService> prober;
  if (config.probe.enabled) {
    prober = std::make_shared<probe::ProbeService>(config.probe);
    if (Status s = prober->start(); !s) {
      log::error("probe: " + s.error().message);
      return kExitFailure;
    }
    collection.add_self_metrics([prober](MetricSink& sink) { prober->add_metrics(sink); });
  }

  // Reload: read and check the file on the event loop; an invalid file
  // changes nothing. A valid one is applied between collections, keeping
  // counters, per-QP series and bindings.
  auto reload = [&](const std::function<void(bool, std::string)>& done) {
    Config next;
    std::shared_ptr<const WebSecurity> next_security;
    auto errors = load_config(cli, next);
    // The web configuration file and its certificates are read again too; a
    // broken one rejects the reload like a broken configuration file.
    if (errors.empty()) errors = load_web_security(next.web.config_file, next_security);
    if (!errors.empty()) {
      for (const auto& e : errors) log::error("reload rejected: " + e);
      reload_status->successful = false;
      done(false,
           "reload rejected, configuration kept: " + errors.front() +
               (errors.size() > 1 ? " (and " + std::to_string(errors.size() - 1) + " more)" : ""));
      return;
    }
    if (next.web.listen_address != config.web.listen_address) {
      log::warn("reload: web.listen_address changes take effect at the next start");
    }
    if (next.collection.netlink_timeout != config.collection.netlink_timeout) {
      log::warn("reload: collection.netlink_timeout changes take effect at the next start");
    }
    if (next.otlp != config.otlp) {
      log::warn("reload: otlp changes take effect at the next start");
    }
    if (next.probe.enabled != config.probe.enabled) {
      log::warn("reload: turning the probe on or off takes effect at the next start");
    } else if (prober && next.probe != config.probe) {
      prober->update(next.probe);
    }
    cache.run_exclusive([next](Collection& c) { c.reconfigure(next); },
                        [&, next, next_security, done] {
                          config = next;
                          apply_log_level(config);
                          server.update_config(config.web);
                          server.update_security(next_security);
                          if (!config.web.config_file.empty()) {
                            log::info("web configuration " + config.web.config_file + ": " +
                                      next_security->describe());
                          }
                          cache.set_max_age(config.collection.max_age);
                          cache.start_maintenance(collection.maintenance_interval());
                          reload_status->successful = true;
                          reload_status->success_timestamp = now_seconds();
                          log::info("configuration reloaded");
                          done(true, "configuration reloaded");
                        });
  };
  server.set_reload_hook(reload);

  // Signals are caught before the server announces itself, so a supervisor
  // that signals right after the "listening" line is never too early.
  boost::asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  boost::asio::steady_timer deadline(io);
  std::function<void()> wait_signal = [&] {
    signals.async_wait([&](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      if (sig == SIGHUP) {
        log::info("SIGHUP: reloading the configuration");
        reload([](bool, const std::string&) {});
        wait_signal();
        return;
      }
      log::info(std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") +
                ", finishing requests in flight");
      signals.cancel();
      // Requests in flight get a bounded time to finish.
      deadline.expires_after(config.web.write_timeout + config.web.read_timeout);
      deadline.async_wait([&](const boost::system::error_code& tec) {
        if (!tec) {
          log::warn("shutdown deadline reached; closing remaining connections");
          io.stop();
        }
      });
      server.stop([&] { deadline.cancel(); });
      if (pusher) pusher->request_stop();
      cache.stop([](Collection& c) { c.restore_kernel_state(); });
    });
  };
  wait_signal();

  if (Status s = server.start(); !s) {
    log::error(s.error().message);
    return kExitFailure;
  }
  if (collection.manages_kernel_state()) cache.start_maintenance(collection.maintenance_interval());
  if (pusher) pusher->start();
  const auto ep = server.local_endpoint();
  if (!config.web.config_file.empty()) {
    log::info("web configuration " + config.web.config_file + ": " + security->describe());
  }
  log::info("rdma_exporter " + std::string(exporter_version()) + " listening on " +
            ep.address().to_string() + ":" + std::to_string(ep.port()) +
            (server.serves_tls() ? " (TLS)" : ""));

  io.run();
  if (pusher) pusher->stop();
  if (prober) prober->stop();
  log::info("stopped");
  return kExitOk;
}

}  // namespace
}  // namespace rdma_exporter

int main(int argc, char** argv) {
  using namespace rdma_exporter;
  std::signal(SIGPIPE, SIG_IGN);
  CommandLine cli;
  std::vector<std::string> errors = parse_command_line(argc, argv, cli);
  if (!errors.empty()) {
    for (const auto& e : errors) std::fprintf(stderr, "rdma_exporter: %s\n", e.c_str());
    std::fprintf(stderr, "Try 'rdma_exporter --help'.\n");
    return kExitUsage;
  }
  if (cli.help) {
    std::cout << cli.help_text;
    return kExitOk;
  }
  if (cli.version) {
    std::cout << "rdma_exporter " << exporter_version() << " (revision " << exporter_revision()
              << ")\n";
    return kExitOk;
  }
  if (cli.check_file) {
    Config config;
    auto problems = load_config_file(*cli.check_file, config);
    std::shared_ptr<const WebSecurity> security;
    if (problems.empty()) problems = load_web_security(config.web.config_file, security);
    for (const auto& p : problems) std::fprintf(stderr, "%s\n", p.c_str());
    if (!problems.empty()) return kExitUsage;
    std::printf("%s: configuration is valid\n", cli.check_file->c_str());
    return kExitOk;
  }

  Config config;
  errors = load_config(cli, config);
  if (!errors.empty()) {
    for (const auto& e : errors) std::fprintf(stderr, "rdma_exporter: %s\n", e.c_str());
    return kExitUsage;
  }
  std::shared_ptr<const WebSecurity> security;
  if (!cli.once) errors = load_web_security(config.web.config_file, security);
  if (!errors.empty()) {
    for (const auto& e : errors) std::fprintf(stderr, "rdma_exporter: %s\n", e.c_str());
    return kExitUsage;
  }
  apply_log_level(config);
  report_rdma_presence(config);
  for (const auto& problem : privilege_problems(config, read_privileges())) log::warn(problem);

  try {
    return cli.once ? run_once(config, cli) : serve(config, security, cli);
  } catch (const std::exception& e) {
    log::error(std::string("fatal: ") + e.what());
    return kExitFailure;
  }
}
