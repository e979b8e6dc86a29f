// rdma_exporter: Prometheus exporter for the Linux RDMA stack.

#include <csignal>
#include <cstdio>
#include <iostream>

#include "common/file.hpp"
#include "common/kernel/netlink/socket_transport.hpp"
#include "common/kernel/sys/reader.hpp"
#include "common/log.hpp"
#include "exporter/build_info.hpp"
#include "exporter/cli.hpp"
#include "exporter/collection.hpp"
#include "exporter/daemon.hpp"
#include "exporter/formats/output_formats.hpp"
#include "exporter/otlp/environment.hpp"
#include "exporter/otlp/pusher.hpp"
#include "exporter/otlp/tls.hpp"
#include "exporter/privileges.hpp"

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
    log::warn(
        "no RDMA on this host: no rdma netlink and no RDMA class directory in sysfs; "
        "serving the exporter's own metrics only",
        {{"path", reader.class_dir().string()}, {"err", netlink.error().message}});
  } else {
    log::warn("rdma netlink unavailable; exporting what sysfs has",
              {{"err", netlink.error().message}});
  }
}

std::string render_once(const Snapshot& snap, const std::string& format, const Config& config) {
  const OutputFormat* f = find_output_format(format);  // checked with the command line
  if (f == nullptr) f = &output_formats().front();
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return f->render({snap, otlp_context(config.otlp), std::chrono::duration<double>(now).count()});
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
    if (const Status written = write_file_atomically(*cli.output, body); !written) {
      std::fprintf(stderr, "writing the metrics failed: %s\n", written.error().message.c_str());
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

int run(int argc, char** argv) {
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
    auto problems = apply_otlp_environment(process_environment(), config.otlp);
    for (auto& p : load_config_file(*cli.check_file, config)) problems.push_back(std::move(p));
    if (problems.empty()) problems = otlp_tls_problems(config.otlp);
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
  config.collection.once = cli.once;
  std::shared_ptr<const WebSecurity> security;
  if (!cli.once) errors = load_web_security(config.web.config_file, security);
  if (!errors.empty()) {
    for (const auto& e : errors) std::fprintf(stderr, "rdma_exporter: %s\n", e.c_str());
    return kExitUsage;
  }
  apply_log_level(config);
  // Room for the sysfs files the collectors keep open between collections.
  sysfs::raise_open_file_limit();
  report_rdma_presence(config);
  for (const auto& problem : privilege_problems(config, read_privileges())) log::warn(problem);

  try {
    return cli.once ? run_once(config, cli) : Daemon(cli, config, security).run();
  } catch (const std::exception& e) {
    log::error("fatal", {{"err", e.what()}});
    return kExitFailure;
  }
}

}  // namespace
}  // namespace rdma_exporter

// What escapes run() before the daemon's own handler (the command line, the
// configuration: out of memory) ends the program with its message and
// status 1, not std::terminate.
int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return rdma_exporter::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rdma_exporter: fatal: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "rdma_exporter: fatal: an unknown exception\n");
  }
  return rdma_exporter::kExitFailure;
}
