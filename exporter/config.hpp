#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "collectors/registry.hpp"
#include "common/address.hpp"
#include "common/duration.hpp"
#include "common/kubernetes/options.hpp"
#include "common/result.hpp"
#include "exporter/otlp/options.hpp"
#include "exporter/probe/plan/options.hpp"

namespace rdma_exporter {

inline constexpr const char* kDefaultListenAddress = ":10910";
inline constexpr const char* kDefaultTelemetryPath = "/metrics";

// The whole configuration. Every field has a default, so the exporter runs
// with no file at all. docs/configuration.md documents each key.
struct Config {
  struct Web {
    // Each address gets its own listener; all of them share the limits below.
    std::vector<std::string> listen_addresses{kDefaultListenAddress};
    std::string telemetry_path = kDefaultTelemetryPath;  // where the metrics are served
    int max_connections = 64;
    int max_connections_per_source = 16;              // open connections from one client address
    Duration read_timeout{std::chrono::seconds(10)};  // a whole request must arrive within
    // From accept (TLS handshake included), or from a later request's first
    // byte, to the end of the request's headers; the shorter of this and
    // read_timeout (idle_timeout for a later request) applies.
    Duration header_timeout{std::chrono::seconds(5)};
    Duration idle_timeout{std::chrono::seconds(60)};   // keep-alive between requests
    Duration write_timeout{std::chrono::seconds(30)};  // a whole response must be taken within
    std::size_t max_request_bytes = 8192;              // request line and headers
    bool enable_lifecycle = false;                     // POST /-/reload
    // TLS and basic auth (exporter/http/web_config.hpp); empty: plain HTTP, no
    // auth. A relative path in the file is resolved against its directory.
    std::string config_file;
  } web;

  struct Collection {
    Duration max_age{std::chrono::seconds(1)};  // a result this young is served again
    Duration netlink_timeout{std::chrono::seconds(5)};
    // One collection, then exit (--once): from the command line, not the file.
    bool once = false;
  } collection;

  struct Devices {
    std::vector<std::string> include;
    std::vector<std::string> exclude;
  } devices;

  struct Sysfs {
    std::string root = "/sys";
  } sysfs;

  // Which collectors run (the `collectors` section) and each one's options
  // (its own section: qp_counters, optional_counters, ethtool, dcb), as the
  // collector registry defines them.
  CollectorSettings collectors;

  OtlpOptions otlp;
  // Pod and container names from the node's CRI and pod-resources sockets.
  kubernetes::Options kubernetes;

  probe::ProbeOptions probe;

  struct Log {
    std::string level = "info";
    std::string format = "logfmt";  // or json
  } log;
};

// Parses YAML text into `out` (which holds the defaults on entry). Returns one
// line per problem, naming the source, line, column, key and what was
// expected; an empty list means `out` is valid.
std::vector<std::string> parse_config(const std::string& yaml_text, const std::string& source,
                                      Config& out);

// Reads and parses a file; a missing or unreadable file is one problem.
std::vector<std::string> load_config_file(const std::string& path, Config& out);

// A path read from `file`: relative ones are resolved against the file's
// directory; empty and absolute paths are returned unchanged.
std::string resolve_relative(const std::string& path, const std::string& file);

// Why `path` cannot be web.telemetry_path; empty when it can.
std::string telemetry_path_problem(const std::string& path);

// Checks the values that command-line flags may also set.
std::vector<std::string> validate_config(const Config& config);

// Sets the process's log level and format to `log.level` and `log.format`.
void apply_log_level(const Config& config);

}  // namespace rdma_exporter
