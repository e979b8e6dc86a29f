#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "exporter/config.hpp"

namespace rdma_exporter {

// What the command line asked for. Flags override the configuration file.
struct CommandLine {
  bool help = false;
  bool version = false;
  bool once = false;
  std::string help_text;
  std::optional<std::string> config_file;
  std::optional<std::string> check_file;
  std::vector<std::string> listen_addresses;  // --web.listen-address, repeatable
  std::optional<std::string> telemetry_path;
  bool systemd_socket = false;  // listen on the sockets systemd passes instead of binding
  std::optional<std::string> web_config_file;
  std::optional<std::string> sysfs_root;
  std::optional<std::string> log_level;
  std::optional<std::string> log_format;
  std::vector<std::string> devices_include;
  std::vector<std::string> devices_exclude;
  std::string format = "prometheus";  // --once output format
  std::optional<std::string> output;  // --once output file (written atomically)
  // --collector.<name> (true) and --no-collector.<name> (false), the last
  // one given for a name winning; over --collector.disable-defaults, which
  // turns every collector off first.
  std::map<std::string, bool> collectors;
  bool collectors_disable_defaults = false;
  // --web.disable-exporter-metrics: no process_* and no rdma_exporter_http_*.
  bool disable_exporter_metrics = false;
};

// Returns one line per problem; empty on success.
std::vector<std::string> parse_command_line(int argc, const char* const* argv, CommandLine& out);

void apply_overrides(const CommandLine& cli, Config& config);

// The configuration the command line asks for: the OTEL_* environment
// (exporter/otlp/environment.hpp), the file (if any) over it, then the flags
// over that, validated (with the OTLP TLS files). One line per problem.
std::vector<std::string> load_config(const CommandLine& cli, Config& config);

}  // namespace rdma_exporter
