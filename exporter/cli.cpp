#include "exporter/cli.hpp"

#include <algorithm>
#include <boost/program_options.hpp>
#include <sstream>

#include "collectors/registry.hpp"
#include "exporter/formats/output_formats.hpp"
#include "exporter/otlp/environment.hpp"
#include "exporter/otlp/tls.hpp"

namespace rdma_exporter {
namespace po = boost::program_options;

namespace {

constexpr std::string_view kCollectorFlag = "collector.";
constexpr std::string_view kNoCollectorFlag = "no-collector.";
constexpr std::string_view kDisableDefaults = "collector.disable-defaults";

// One flag pair per collector of the registry, and --collector.disable-defaults.
po::options_description collector_options() {
  po::options_description desc(
      "Collectors (these flags override the configuration file's collectors section)");
  desc.add_options()(std::string(kDisableDefaults).c_str(),
                     "turn every collector off, the configuration file's included; only those "
                     "named with --collector.<name> run");
  for (const CollectorEntry& e : collector_registry()) {
    const std::string on = std::string(kCollectorFlag) + e.name;
    const std::string off = std::string(kNoCollectorFlag) + e.name;
    const std::string help = "enable the " + e.name + " collector (default " +
                             (e.enabled_by_default ? "enabled" : "disabled") + "): " + e.help;
    const std::string no_help = "disable the " + e.name + " collector";
    desc.add_options()(on.c_str(), help.c_str());
    desc.add_options()(off.c_str(), no_help.c_str());
  }
  return desc;
}

std::string collector_names() {
  std::string out;
  for (const CollectorEntry& e : collector_registry()) {
    if (!out.empty()) out += ", ";
    out += e.name;
  }
  return out;
}

// "--collector.foo" or "--no-collector.foo" naming no collector: which name.
std::optional<std::string> unknown_collector(std::string option) {
  while (option.starts_with("-")) option.erase(0, 1);
  option = option.substr(0, option.find('='));
  for (std::string_view prefix : {kCollectorFlag, kNoCollectorFlag}) {
    if (option.starts_with(prefix)) return option.substr(prefix.size());
  }
  return std::nullopt;
}

// The flags that are not the collectors'.
po::options_description general_options() {
  po::options_description desc(
      "Usage: rdma_exporter [options]\n\n"
      "Exports the Linux RDMA stack's counters (rdma netlink and sysfs) for Prometheus.\n"
      "Flags override the configuration file; see docs/configuration.md.\n\nOptions");
  std::string listen_help = std::string("address to listen on (default ") + kDefaultListenAddress +
                            "); repeatable: each address gets its own listener";
  const std::string format_help = "with --once: " + output_format_list(true);
  std::string path_help = std::string("path under which the metrics are served (default ") +
                          kDefaultTelemetryPath + ")";
  // clang-format off
  desc.add_options()
      ("help,h", "print this help and exit")
      ("version", "print the version and exit")
      ("once", "collect once, print the metrics to stdout and exit: 0 when every collector "
               "succeeded, 1 otherwise")
      ("format", po::value<std::string>(), format_help.c_str())
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
                                               "event on stderr")
      ("web.disable-exporter-metrics", "leave out the exporter's process_* and "
                                       "rdma_exporter_http_* metrics");
  // clang-format on
  return desc;
}

// --collector.<name>, --no-collector.<name> and --collector.disable-defaults,
// in command-line order, so that the last flag for a collector wins.
void take_collector_flags(const po::parsed_options& parsed, CommandLine& out) {
  for (const po::option& o : parsed.options) {
    const std::string_view key = o.string_key;
    if (key == kDisableDefaults) {
      out.collectors_disable_defaults = true;
    } else if (key.starts_with(kCollectorFlag)) {
      out.collectors[std::string(key.substr(kCollectorFlag.size()))] = true;
    } else if (key.starts_with(kNoCollectorFlag)) {
      out.collectors[std::string(key.substr(kNoCollectorFlag.size()))] = false;
    }
  }
}

// The values of the other flags into `out`, and how they go together: a
// problem, or empty.
std::string take_values(const po::variables_map& vm, CommandLine& out) {
  out.help = vm.count("help") > 0;
  out.version = vm.count("version") > 0;
  out.once = vm.count("once") > 0;
  out.disable_exporter_metrics = vm.count("web.disable-exporter-metrics") > 0;
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
  if (find_output_format(out.format) == nullptr) {
    return "--format: expected " + output_format_list(false) + ", got \"" + out.format + "\"";
  }
  if (!out.once && (vm.count("format") != 0U || out.output)) {
    return "--format and --output go with --once";
  }
  if (out.systemd_socket && !out.listen_addresses.empty()) {
    return "--web.systemd-socket and --web.listen-address exclude each other: with socket "
           "activation the .socket unit says where to listen";
  }
  if (vm.count("devices.include") != 0U) {
    out.devices_include = vm["devices.include"].as<std::vector<std::string>>();
  }
  if (vm.count("devices.exclude") != 0U) {
    out.devices_exclude = vm["devices.exclude"].as<std::vector<std::string>>();
  }
  return {};
}

}  // namespace

std::vector<std::string> parse_command_line(int argc, const char* const* argv, CommandLine& out) {
  po::options_description desc = general_options();
  desc.add(collector_options());
  std::ostringstream help;
  help << desc << "\nExit codes: 0 success, 1 runtime failure, 2 usage or configuration error.\n";
  out.help_text = help.str();

  po::variables_map vm;
  try {
    const po::positional_options_description no_positionals;
    const po::parsed_options parsed =
        po::command_line_parser(argc, argv).options(desc).positional(no_positionals).run();
    po::store(parsed, vm);
    po::notify(vm);
    take_collector_flags(parsed, out);
  } catch (const po::unknown_option& e) {
    if (auto name = unknown_collector(e.get_option_name())) {
      return {"unknown collector \"" + *name + "\" in " + e.get_option_name() +
              " (collectors: " + collector_names() + ")"};
    }
    return {e.what()};
  } catch (const po::error& e) {
    return {e.what()};
  }
  if (std::string problem = take_values(vm, out); !problem.empty()) return {problem};
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
  if (cli.collectors_disable_defaults) {
    for (const CollectorEntry& e : collector_registry())
      config.collectors.set_enabled(e.name, false);
  }
  for (const auto& [name, on] : cli.collectors) config.collectors.set_enabled(name, on);
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
