#include "exporter/otlp/options.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <string_view>

#include "common/text.hpp"

namespace rdma_exporter {
namespace {

constexpr std::string_view kDefaultPath = "/v1/metrics";

bool equals(std::string_view a, std::string_view b) {
  return a == b;
}

bool is_token_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) != 0 ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

}  // namespace

void set_pair(OtlpOptions::Pairs& pairs, const std::string& name, const std::string& value,
              bool (*same)(std::string_view, std::string_view)) {
  auto it =
      std::find_if(pairs.begin(), pairs.end(), [&](const auto& p) { return same(p.first, name); });
  if (it != pairs.end()) {
    *it = {name, value};
  } else {
    pairs.emplace_back(name, value);
  }
}

bool header_names_equal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string parse_otlp_endpoint(const std::string& url, OtlpEndpoint& out) {
  const std::string example =
      "expected an http:// or https:// URL such as http://127.0.0.1:4318/v1/metrics";
  for (char c : url) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return example + ", got one with a space or control character";
  }
  bool tls = false;
  std::size_t scheme_length = 0;
  if (starts_with_nocase(url, "https://")) {
    tls = true;
    scheme_length = 8;
  } else if (starts_with_nocase(url, "http://")) {
    scheme_length = 7;
  } else {
    return example + ", got \"" + url + "\"";
  }
  const std::string_view rest = std::string_view(url).substr(scheme_length);
  const std::size_t authority_end = std::min(rest.find_first_of("/?#"), rest.size());
  const std::string_view authority = rest.substr(0, authority_end);
  std::string_view tail = rest.substr(authority_end);
  if (authority.find('@') != std::string_view::npos) {
    return "credentials in the URL are not supported; put them in otlp.headers";
  }
  if (tail.find('#') != std::string_view::npos) return "a URL fragment (#...) is not allowed";

  std::string_view host;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return example + ": unclosed [ in the host";
    host = authority.substr(1, close - 1);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return example + ": unexpected text after ]";
      port = after.substr(1);
      if (port.empty()) return example + ": empty port";
    }
  } else {
    const std::size_t colon = authority.find(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) return example + ": empty port";
    }
  }
  if (host.empty()) return example + ": no host";
  unsigned value = tls ? 443 : 80;
  if (!port.empty()) {
    auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || p != port.data() + port.size() || value == 0 || value > 65535) {
      return "the port must be a number from 1 to 65535, got \"" + std::string(port) + "\"";
    }
  }
  out.tls = tls;
  out.host = std::string(host);
  out.port = static_cast<unsigned short>(value);
  out.host_header = std::string(authority);
  if (tail.empty() || tail.front() == '?') {
    out.target = std::string(kDefaultPath) + std::string(tail);
  } else {
    out.target = std::string(tail);
  }
  return {};
}

std::string otlp_endpoint_problem(const std::string& url) {
  OtlpEndpoint ignored;
  return parse_otlp_endpoint(url, ignored);
}

std::string otlp_header_problem(const std::string& name, const std::string& value) {
  if (name.empty() || !std::all_of(name.begin(), name.end(), is_token_char)) {
    return "\"" + name + "\" is not a valid HTTP header name";
  }
  for (const char* own : {"host", "content-type", "content-length", "content-encoding",
                          "transfer-encoding", "connection", "user-agent"}) {
    if (equals_nocase(name, own)) return "header " + name + " is set by the exporter";
  }
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) {
      return "the value of header " + name + " holds a control character";
    }
  }
  return {};
}

std::string otlp_attribute_problem(const std::string& key) {
  return key.empty() ? "an attribute key must not be empty" : std::string();
}

std::string otlp_encoding_problem(const std::string& value, OtlpOptions::Encoding& out) {
  if (value == "protobuf") {
    out = OtlpOptions::Encoding::protobuf;
  } else if (value == "json") {
    out = OtlpOptions::Encoding::json;
  } else {
    return "expected one of protobuf, json, got \"" + value + "\"";
  }
  return {};
}

std::string otlp_compression_problem(const std::string& value, OtlpOptions::Compression& out) {
  if (value == "none") {
    out = OtlpOptions::Compression::none;
  } else if (value == "gzip") {
    out = OtlpOptions::Compression::gzip;
  } else {
    return "expected one of none, gzip, got \"" + value + "\"";
  }
  return {};
}

std::vector<std::string> validate_otlp_options(const OtlpOptions& o) {
  std::vector<std::string> errors;
  if (std::string p = otlp_endpoint_problem(o.endpoint); !p.empty()) {
    errors.push_back("otlp.endpoint: " + p);
  }
  if (o.interval.count() <= 0) errors.emplace_back("otlp.interval: must be positive");
  if (o.timeout.count() <= 0) errors.emplace_back("otlp.timeout: must be positive");
  if (o.max_backoff.count() <= 0) errors.emplace_back("otlp.max_backoff: must be positive");
  if (o.queue_size < 1 || o.queue_size > 1000) {
    errors.emplace_back("otlp.queue_size: expected an integer from 1 to 1000");
  }
  if (o.service_name.empty()) errors.emplace_back("otlp.service_name: must not be empty");
  for (const auto& [name, value] : o.headers) {
    if (std::string p = otlp_header_problem(name, value); !p.empty()) {
      errors.push_back("otlp.headers: " + p);
    }
  }
  for (const auto& kv : o.resource_attributes) {
    if (std::string p = otlp_attribute_problem(kv.first); !p.empty()) {
      errors.push_back("otlp.resource_attributes: " + p);
    }
  }
  if (o.cert_file.empty() != o.key_file.empty()) {
    errors.emplace_back(o.cert_file.empty()
                            ? "otlp.key_file: set without otlp.cert_file (a client certificate "
                              "needs both)"
                            : "otlp.cert_file: set without otlp.key_file (a client certificate "
                              "needs both)");
  }
  return errors;
}

void parse_otlp_options(Walker& w, const YAML::Node& node, const std::string& path,
                        OtlpOptions& o) {
  std::string choice;  // encoding and compression land in o as enums
  // A duration that must be positive; a rejected value keeps the default.
  auto positive = [&w](Duration& out) -> Walker::Field {
    return [&w, &out](const YAML::Node& v, const std::string& key) {
      Duration d = out;
      const Walker::Section section = w.section();
      w.duration(d)(v, key);
      if (section.failed()) return;
      if (d.count() <= 0) return w.error_at(v, key, "must be positive");
      out = d;
    };
  };
  // A mapping of strings to strings, each pair checked by `check`. It is
  // merged into what `out` holds (from the environment): a name given here
  // replaces the same name (`same` compares names), others are added.
  auto pairs = [&w](OtlpOptions::Pairs& out,
                    const std::function<std::string(const std::string&, const std::string&)>& check,
                    bool (*same)(std::string_view, std::string_view)) -> Walker::Field {
    return [&w, &out, check, same](const YAML::Node& v, const std::string& key) {
      if (v.IsNull()) return;
      if (!v.IsMap()) return w.error_at(v, key, "expected a mapping of names to strings");
      for (const auto& kv : v) {
        if (!kv.second.IsScalar()) {
          w.error_at(kv.second, key + "." + kv.first.Scalar(), "expected a string");
          continue;
        }
        if (std::string problem = check(kv.first.Scalar(), kv.second.Scalar()); !problem.empty()) {
          w.error_at(kv.first, key + "." + kv.first.Scalar(), problem);
          continue;
        }
        set_pair(out, kv.first.Scalar(), kv.second.Scalar(), same);
      }
    };
  };
  w.mapping(
      node, path,
      {{"enabled", w.boolean(o.enabled)},
       {"endpoint", w.optional_string_into(o.endpoint, otlp_endpoint_problem)},
       {"encoding",
        w.optional_string_into(
            choice, [&o](const std::string& v) { return otlp_encoding_problem(v, o.encoding); })},
       {"compression", w.optional_string_into(choice,
                                              [&o](const std::string& v) {
                                                return otlp_compression_problem(v, o.compression);
                                              })},
       {"headers", pairs(o.headers, otlp_header_problem, header_names_equal)},
       {"interval", positive(o.interval)},
       {"timeout", positive(o.timeout)},
       {"max_backoff", positive(o.max_backoff)},
       {"queue_size", w.integer(o.queue_size, 1, 1000)},
       {"service_name", w.optional_string_into(o.service_name,
                                               [](const std::string& v) {
                                                 return v.empty() ? "must not be empty" : "";
                                               })},
       {"resource_attributes",
        pairs(
            o.resource_attributes,
            [](const std::string& k, const std::string&) { return otlp_attribute_problem(k); },
            equals)},
       {"ca_file", w.string(o.ca_file)},
       {"cert_file", w.string(o.cert_file)},
       {"key_file", w.string(o.key_file)}});
}

}  // namespace rdma_exporter
