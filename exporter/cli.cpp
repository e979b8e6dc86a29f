#include "exporter/cli.hpp"

#include <algorithm>
#include <boost/program_options.hpp>
#include <sstream>

#include "exporter/otlp/environment.hpp"
#include "exporter/otlp/tls.hpp"

namespace rdma_exporter {
namespace po = boost::program_options;

std::vector<std::string> parse_command_line(int argc, const char* const* argv, CommandLine& out) {
  po::options_description desc(
      "Usage: rdma_exporter [options]\n\n"
      "Exports the Linux RDMA stack's counters (rdma netlink and sysfs) for Prometheus.\n"
      "Flags override the configuration file; see docs/configuration.md.\n\nOptions");
  std::string listen_help =
      std::string("address to listen on (default ") + kDefaultListenAddress + ")";
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
      ("web.listen-address", po::value<std::string>(), listen_help.c_str())
      ("web.config.file", po::value<std::string>(), "web configuration file (exporter-toolkit "
                                                    "format): TLS, basic auth; overrides "
                                                    "web.config_file")
      ("path.sysfs", po::value<std::string>(), "sysfs mount point (default /sys)")
      ("devices.include", po::value<std::vector<std::string>>(), "regular expression of device "
                                                                "names to read (repeatable)")
      ("devices.exclude", po::value<std::vector<std::string>>(), "regular expression of device "
                                                                "names never to read (repeatable)")
      ("log.level", po::value<std::string>(), "debug, info, warn or error (default info)");
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
  get("web.listen-address", out.listen_address);
  get("web.config.file", out.web_config_file);
  get("path.sysfs", out.sysfs_root);
  get("log.level", out.log_level);
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
  if (vm.count("devices.include") != 0U) {
    out.devices_include = vm["devices.include"].as<std::vector<std::string>>();
  }
  if (vm.count("devices.exclude") != 0U) {
    out.devices_exclude = vm["devices.exclude"].as<std::vector<std::string>>();
  }
  return {};
}

void apply_overrides(const CommandLine& cli, Config& config) {
  if (cli.listen_address) config.web.listen_address = *cli.listen_address;
  if (cli.web_config_file) config.web.config_file = *cli.web_config_file;
  if (cli.sysfs_root) config.sysfs.root = *cli.sysfs_root;
  if (cli.log_level) config.log.level = *cli.log_level;
  if (!cli.devices_include.empty()) config.devices.include = cli.devices_include;
  if (!cli.devices_exclude.empty()) config.devices.exclude = cli.devices_exclude;
}

std::vector<std::string> load_config(const CommandLine& cli, Config& config) {
  config = Config{};
  // The OTEL_* environment first: the file's keys win over it.
  std::vector<std::string> errors = apply_otlp_environment(process_environment(), config.otlp);
  if (cli.config_file) {
    for (auto& e : load_config_file(*cli.config_file, config)) errors.push_back(std::move(e));
  }
  if (!errors.empty()) return errors;
  apply_overrides(cli, config);
  errors = validate_config(config);
  if (errors.empty()) errors = otlp_tls_problems(config.otlp);
  return errors;
}

}  // namespace rdma_exporter
