#include "exporter/cli.hpp"

#include <algorithm>
#include <boost/program_options.hpp>
#include <sstream>

namespace rdma_exporter {
namespace po = boost::program_options;

std::vector<std::string> parse_command_line(int argc, const char* const* argv, CommandLine& out) {
  po::options_description desc(
      "Usage: rdma_exporter [options]\n\n"
      "Exports the Linux RDMA stack's counters (rdma netlink and sysfs) for Prometheus.\n"
      "Flags override the configuration file; see docs/configuration.md.\n\nOptions");
  std::string listen_help = std::string("address to listen on (default ") + kDefaultListenAddress +
                            "); repeatable: each address gets its own listener";
  std::string path_help = std::string("path under which the metrics are served (default ") +
                          kDefaultTelemetryPath + ")";
  // clang-format off
  desc.add_options()
      ("help,h", "print this help and exit")
      ("version", "print the version and exit")
      ("once", "collect once, print the metrics to stdout and exit: 0 when every collector "
               "succeeded, 1 otherwise")
      ("format", po::value<std::string>(), "with --once: prometheus (default), openmetrics, json "
                                           "or otlp-json")
      ("output", po::value<std::string>(), "with --once: write to this file atomically (temporary "
                                           "file, then rename) instead of stdout")
      ("config.file", po::value<std::string>(), "YAML configuration file")
      ("config.check", po::value<std::string>(), "validate a configuration file and exit: 0 when "
                                                 "valid, 2 with one line per problem")
      ("web.listen-address", po::value<std::vector<std::string>>(), listen_help.c_str())
      ("web.telemetry-path", po::value<std::string>(), path_help.c_str())
      ("web.systemd-socket", "listen on the sockets systemd passes (socket activation, "
                             "rdma_exporter.socket) instead of --web.listen-address")
      ("web.config.file", po::value<std::string>(), "web configuration file (exporter-toolkit "
                                                    "format): TLS, basic auth; overrides "
                                                    "web.config_file")
      ("path.sysfs", po::value<std::string>(), "sysfs mount point (default /sys)")
      ("devices.include", po::value<std::vector<std::string>>(), "regular expression of device "
                                                                "names to read (repeatable)")
      ("devices.exclude", po::value<std::vector<std::string>>(), "regular expression of device "
                                                                "names never to read (repeatable)")
      ("log.level", po::value<std::string>(), "debug, info, warn or error (default info)")
      ("log.format", po::value<std::string>(), "logfmt or json (default logfmt): one line per "
                                               "event on stderr");
  // clang-format on
  std::ostringstream help;
  help << desc << "\nExit codes: 0 success, 1 runtime failure, 2 usage or configuration error.\n";
  out.help_text = help.str();

  po::variables_map vm;
  try {
    const po::positional_options_description no_positionals;
    po::store(po::command_line_parser(argc, argv).options(desc).positional(no_positionals).run(),
              vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return {e.what()};
  }
  out.help = vm.count("help") > 0;
  out.version = vm.count("version") > 0;
  out.once = vm.count("once") > 0;
  auto get = [&](const char* key, std::optional<std::string>& field) {
    if (vm.count(key) != 0U) field = vm[key].as<std::string>();
  };
  get("config.file", out.config_file);
  get("config.check", out.check_file);
  get("web.telemetry-path", out.telemetry_path);
  out.systemd_socket = vm.count("web.systemd-socket") > 0;
  if (vm.count("web.listen-address") != 0U) {
    out.listen_addresses = vm["web.listen-address"].as<std::vector<std::string>>();
  }
  get("web.config.file", out.web_config_file);
  get("path.sysfs", out.sysfs_root);
  get("log.level", out.log_level);
  get("log.format", out.log_format);
  get("output", out.output);
  if (vm.count("format") != 0U) out.format = vm["format"].as<std::string>();
  static const char* kFormats[] = {"prometheus", "openmetrics", "json", "otlp-json"};
  if (std::find(std::begin(kFormats), std::end(kFormats), out.format) == std::end(kFormats)) {
    return {"--format: expected prometheus, openmetrics, json or otlp-json, got \"" + out.format +
            "\""};
  }
  if (!out.once && (vm.count("format") != 0U || out.output)) {
    return {"--format and --output go with --once"};
  }
  if (out.systemd_socket && !out.listen_addresses.empty()) {
    return {
        "--web.systemd-socket and --web.listen-address exclude each other: with socket "
        "activation the .socket unit says where to listen"};
  }
  if (vm.count("devices.include") != 0U) {
    out.devices_include = vm["devices.include"].as<std::vector<std::string>>();
  }
  if (vm.count("devices.exclude") != 0U) {
    out.devices_exclude = vm["devices.exclude"].as<std::vector<std::string>>();
  }
  return {};
}

void apply_overrides(const CommandLine& cli, Config& config) {
  if (!cli.listen_addresses.empty()) config.web.listen_addresses = cli.listen_addresses;
  if (cli.telemetry_path) config.web.telemetry_path = *cli.telemetry_path;
  if (cli.web_config_file) config.web.config_file = *cli.web_config_file;
  if (cli.sysfs_root) config.sysfs.root = *cli.sysfs_root;
  if (cli.log_level) config.log.level = *cli.log_level;
  if (cli.log_format) config.log.format = *cli.log_format;
  if (!cli.devices_include.empty()) config.devices.include = cli.devices_include;
  if (!cli.devices_exclude.empty()) config.devices.exclude = cli.devices_exclude;
}

std::vector<std::string> load_config(const CommandLine& cli, Config& config) {
  config = Config{};
  std::vector<std::string> errors;
  if (cli.config_file) errors = load_config_file(*cli.config_file, config);
  if (!errors.empty()) return errors;
  apply_overrides(cli, config);
  return validate_config(config);
}

}  // namespace rdma_exporter
