#include "exporter/otlp/environment.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "common/text.hpp"

namespace rdma_exporter {
namespace {

constexpr const char* kGeneric = "OTEL_EXPORTER_OTLP_";
constexpr const char* kMetrics = "OTEL_EXPORTER_OTLP_METRICS_";
// "No limit", as the specification allows: the largest 32-bit millisecond
// count.
constexpr long long kNoLimitMs = 2147483647;

struct Setting {
  std::string name;  // the variable it came from
  std::string value;
};

// A variable that is set and not empty (the specification reads an empty
// value as unset).
std::optional<Setting> get(const EnvLookup& env, const std::string& name) {
  auto v = env(name);
  if (!v || v->empty()) return std::nullopt;
  return Setting{name, *v};
}

// The signal-specific variable, else the generic one.
std::optional<Setting> pick(const EnvLookup& env, const char* suffix) {
  if (auto s = get(env, std::string(kMetrics) + suffix)) return s;
  return get(env, std::string(kGeneric) + suffix);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// key=value members separated by commas, blanks around each allowed, empty
// members skipped. Keys are percent-decoded when `decode_keys`; values
// always. Messages name a member by its position or key, never its value.
std::string parse_list(std::string_view text, bool decode_keys, OtlpOptions::Pairs& out) {
  std::size_t start = 0;
  std::size_t index = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view member = trim(text.substr(start, comma - start));
    start = comma + 1;
    ++index;
    if (member.empty()) continue;
    const std::size_t eq = member.find('=');
    if (eq == std::string_view::npos) {
      return "member " + std::to_string(index) + " has no '=' (expected key=value,key2=value2)";
    }
    const std::string_view raw_key = trim(member.substr(0, eq));
    std::string key(raw_key);
    if (decode_keys && !percent_decode(raw_key, key)) {
      return "member " + std::to_string(index) +
             ": malformed percent-encoding in the key (% must be followed by two hex digits)";
    }
    if (key.empty()) return "member " + std::to_string(index) + " has an empty key";
    std::string value;
    if (!percent_decode(trim(member.substr(eq + 1)), value)) {
      return "the value of " + key +
             " has a malformed percent-encoding (% must be followed by two hex digits)";
    }
    out.emplace_back(std::move(key), std::move(value));
  }
  return {};
}

// A whole number of milliseconds from `min` to 2^31-1.
bool milliseconds_of(const std::string& text, long long min, long long& out) {
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && p == end && out >= min && out <= kNoLimitMs;
}

// The URL with "/" inserted where a path is missing ("http://h:1" ->
// "http://h:1/", "http://h?x" -> "http://h/?x").
std::string with_root_path(const std::string& url) {
  const std::size_t scheme = url.find("://");
  const std::size_t from = scheme == std::string::npos ? 0 : scheme + 3;
  const std::size_t path = url.find_first_of("/?#", from);
  if (path == std::string::npos) return url + "/";
  if (url[path] == '/') return url;
  return url.substr(0, path) + "/" + url.substr(path);
}

// The base URL with "v1/metrics" appended to its path: a '/' is added first
// unless the path ends with one.
std::string metrics_url_of(const std::string& base) {
  std::string url = with_root_path(base);
  const std::size_t scheme = url.find("://");
  const std::size_t path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  const std::size_t query = std::min(url.find_first_of("?#", path), url.size());
  std::string head = url.substr(0, query);
  if (head.back() != '/') head += '/';
  return head + "v1/metrics" + url.substr(query);
}

void report(std::vector<std::string>& errors, const std::string& name, const std::string& what) {
  errors.push_back("environment: " + name + ": " + what);
}

// Where to push, and whether to push at all: the metrics endpoint, or the
// generic one with v1/metrics appended.
void apply_endpoint(const EnvLookup& env, OtlpOptions& o, std::vector<std::string>& errors) {
  std::optional<std::string> endpoint;
  if (auto specific = get(env, std::string(kMetrics) + "ENDPOINT")) {
    if (std::string p = otlp_endpoint_problem(specific->value); !p.empty()) {
      report(errors, specific->name, p);
    } else {
      endpoint = with_root_path(specific->value);
    }
  } else if (auto base = get(env, std::string(kGeneric) + "ENDPOINT")) {
    if (std::string p = otlp_endpoint_problem(base->value); !p.empty()) {
      report(errors, base->name, p);
    } else {
      endpoint = metrics_url_of(base->value);
    }
  }
  if (endpoint) {
    o.endpoint = *endpoint;
    o.enabled = true;
  }
}

// The headers of every request.
void apply_headers(const EnvLookup& env, OtlpOptions& o, std::vector<std::string>& errors) {
  if (auto s = pick(env, "HEADERS")) {
    OtlpOptions::Pairs headers;
    std::string problem = parse_list(s->value, false, headers);
    for (std::size_t i = 0; problem.empty() && i < headers.size(); ++i) {
      problem = otlp_header_problem(headers[i].first, headers[i].second);
    }
    if (!problem.empty()) {
      report(errors, s->name, problem);
    } else {
      o.headers.clear();
      for (const auto& [k, v] : headers) set_pair(o.headers, k, v, header_names_equal);
    }
  }
}

// A request's time limit (0: none).
void apply_timeout(const EnvLookup& env, OtlpOptions& o, std::vector<std::string>& errors) {
  if (auto s = pick(env, "TIMEOUT")) {
    long long ms = 0;
    if (!milliseconds_of(s->value, 0, ms)) {
      report(errors, s->name,
             "expected a whole number of milliseconds from 0 (no limit) to 2147483647, got \"" +
                 s->value + "\"");
    } else {
      o.timeout = std::chrono::milliseconds(ms == 0 ? kNoLimitMs : ms);
    }
  }
}

// gzip or none.
void apply_compression(const EnvLookup& env, OtlpOptions& o, std::vector<std::string>& errors) {
  if (auto s = pick(env, "COMPRESSION")) {
    const std::string v = lower(s->value);
    if (v == "gzip") {
      o.compression = OtlpOptions::Compression::gzip;
    } else if (v == "none") {
      o.compression = OtlpOptions::Compression::none;
    } else {
      report(errors, s->name, "expected gzip or none, got \"" + s->value + "\"");
    }
  }
}

// http/protobuf or http/json; grpc is named and refused.
void apply_protocol(const EnvLookup& env, OtlpOptions& o, std::vector<std::string>& errors) {
  if (auto s = pick(env, "PROTOCOL")) {
    const std::string v = lower(s->value);
    if (v == "http/protobuf") {
      o.encoding = OtlpOptions::Encoding::protobuf;
    } else if (v == "http/json") {
      o.encoding = OtlpOptions::Encoding::json;
    } else if (v == "grpc") {
      report(errors, s->name,
             "grpc is not supported: this exporter speaks OTLP/HTTP; use http/protobuf or "
             "http/json (a Collector's OTLP/HTTP port is 4318)");
    } else {
      report(errors, s->name, "expected http/protobuf or http/json, got \"" + s->value + "\"");
    }
  }
}

// The resource's attributes and the service's name.
void apply_resource(const EnvLookup& env, OtlpOptions& o, std::vector<std::string>& errors) {
  if (auto s = get(env, "OTEL_RESOURCE_ATTRIBUTES")) {
    OtlpOptions::Pairs attributes;
    std::string problem = parse_list(s->value, true, attributes);
    if (!problem.empty()) {
      report(errors, s->name, problem);
    } else {
      for (const auto& [k, v] : attributes) {
        if (k == "service.name") {
          if (v.empty()) {
            report(errors, s->name, "service.name must not be empty");
          } else {
            o.service_name = v;
          }
          continue;
        }
        set_pair(o.resource_attributes, k, v,
                 [](std::string_view a, std::string_view b) { return a == b; });
      }
    }
  }
  if (auto s = get(env, "OTEL_SERVICE_NAME")) o.service_name = s->value;
}

// The push interval.
void apply_interval(const EnvLookup& env, OtlpOptions& o, std::vector<std::string>& errors) {
  if (auto s = get(env, "OTEL_METRIC_EXPORT_INTERVAL")) {
    long long ms = 0;
    if (!milliseconds_of(s->value, 1, ms)) {
      report(
          errors, s->name,
          "expected a whole number of milliseconds from 1 to 2147483647, got \"" + s->value + "\"");
    } else {
      o.interval = std::chrono::milliseconds(ms);
    }
  }
}

// The CA, the client's certificate and key, made absolute.
void apply_certificates(const EnvLookup& env, OtlpOptions& o) {
  auto path = [&](const char* suffix, std::string& out) {
    if (auto s = pick(env, suffix)) {
      std::error_code ec;
      const auto absolute = std::filesystem::absolute(s->value, ec);
      out = ec ? s->value : absolute.lexically_normal().string();
    }
  };
  path("CERTIFICATE", o.ca_file);
  path("CLIENT_CERTIFICATE", o.cert_file);
  path("CLIENT_KEY", o.key_file);
}

}  // namespace

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    // The program never changes its environment.
    const char* v = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe)
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

std::vector<std::string> apply_otlp_environment(const EnvLookup& env, OtlpOptions& o) {
  std::vector<std::string> errors;
  apply_endpoint(env, o, errors);
  apply_headers(env, o, errors);
  apply_timeout(env, o, errors);
  apply_compression(env, o, errors);
  apply_protocol(env, o, errors);
  apply_certificates(env, o);
  apply_resource(env, o, errors);
  apply_interval(env, o, errors);
  return errors;
}

}  // namespace rdma_exporter
