#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/yaml_walker.hpp"

namespace rdma_exporter {

// The `otlp` section of the configuration: periodic push of every metric
// family to an OpenTelemetry Collector over OTLP/HTTP(S). docs/configuration.md
// documents each key; the OTEL_* environment fills the keys the file leaves
// out (exporter/otlp/environment.hpp).
struct OtlpOptions {
  enum class Encoding { protobuf, json };
  enum class Compression { none, gzip };
  using Pairs = std::vector<std::pair<std::string, std::string>>;

  bool enabled = false;
  std::string endpoint = "http://127.0.0.1:4318/v1/metrics";
  Encoding encoding = Encoding::protobuf;
  Compression compression = Compression::none;
  Pairs headers;  // extra request headers, in file order
  std::chrono::milliseconds interval{std::chrono::seconds(60)};  // between collections
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};   // one whole HTTP exchange
  std::chrono::milliseconds max_backoff{std::chrono::seconds(30)};
  std::size_t queue_size = 8;  // payloads waiting to be sent, at most
  std::string service_name = "rdma_exporter";
  Pairs resource_attributes;  // added to (or overriding) the defaults
  // TLS for https:// endpoints, PEM files. ca_file: the CAs that may sign
  // the receiver's certificate (empty: the system's trust store);
  // cert_file + key_file: a client certificate for mutual TLS.
  std::string ca_file;
  std::string cert_file;
  std::string key_file;

  bool operator==(const OtlpOptions&) const = default;
};

// Where to send: the parts of an http:// or https:// URL.
struct OtlpEndpoint {
  bool tls = false;          // https://
  std::string host;          // without brackets for IPv6
  unsigned short port = 80;  // 443 for https:// without a port
  std::string target;        // path and query; "/v1/metrics" when the URL has no path
  std::string host_header;   // as written in the URL ("[::1]:4318")
};

// Parses an endpoint URL. Returns an empty string on success, else what is
// wrong ("the port must be a number ...").
std::string parse_otlp_endpoint(const std::string& url, OtlpEndpoint& out);

// Each returns an empty string when the value is acceptable, else the problem.
std::string otlp_endpoint_problem(const std::string& url);
std::string otlp_header_problem(const std::string& name, const std::string& value);
std::string otlp_attribute_problem(const std::string& key);
std::string otlp_encoding_problem(const std::string& value, OtlpOptions::Encoding& out);
std::string otlp_compression_problem(const std::string& value, OtlpOptions::Compression& out);

// Sets `name` in `pairs` to `value`: replaces the first pair whose name is
// the same (by `same`), else adds one at the end.
void set_pair(OtlpOptions::Pairs& pairs, const std::string& name, const std::string& value,
              bool (*same)(std::string_view, std::string_view));
// HTTP header names compare without case.
bool header_names_equal(std::string_view a, std::string_view b);

// Every problem of the options as set (file or code), one line each, keys
// prefixed with "otlp.". Empty when valid.
std::vector<std::string> validate_otlp_options(const OtlpOptions& options);

// The `otlp` section, one message per problem.
void parse_otlp_options(Walker& w, const YAML::Node& node, const std::string& path,
                        OtlpOptions& out);

}  // namespace rdma_exporter
