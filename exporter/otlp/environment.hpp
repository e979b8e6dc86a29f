#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "exporter/otlp/options.hpp"

namespace rdma_exporter {

// The value of an environment variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process environment (getenv).
EnvLookup process_environment();

// Applies the OpenTelemetry standard environment variables to `out` (the
// defaults, before the configuration file is read over them: keys the file
// sets win, mappings are merged name by name). Empty means unset; a
// signal-specific variable (OTEL_EXPORTER_OTLP_METRICS_*) wins over the
// generic one. docs/configuration.md lists each variable.
//
// - OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: the URL as is (a URL without a path
//   gets "/"); OTEL_EXPORTER_OTLP_ENDPOINT: a base URL, "v1/metrics" is
//   appended to its path. Either one turns push on (enabled: true).
// - _HEADERS: key=value,key2=value2 (W3C Baggage style), values
//   percent-decoded; the signal-specific list replaces the generic one.
// - _TIMEOUT: milliseconds, 0 for no limit (2^31-1 ms); _COMPRESSION: gzip
//   or none; _PROTOCOL: http/protobuf or http/json (grpc is an error).
// - _CERTIFICATE, _CLIENT_CERTIFICATE, _CLIENT_KEY: ca_file, cert_file,
//   key_file (a relative path is taken from the working directory).
// - OTEL_RESOURCE_ATTRIBUTES: key=value,... (keys and values
//   percent-decoded); its service.name sets service_name.
//   OTEL_SERVICE_NAME: service_name, over OTEL_RESOURCE_ATTRIBUTES.
// - OTEL_METRIC_EXPORT_INTERVAL: interval, milliseconds > 0.
//
// A malformed value leaves its option as it was and is one problem line,
// "environment: NAME: what is wrong" (header values are never quoted: they
// may hold secrets).
std::vector<std::string> apply_otlp_environment(const EnvLookup& env, OtlpOptions& out);

}  // namespace rdma_exporter
