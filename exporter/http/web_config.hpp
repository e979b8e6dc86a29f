#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/duration.hpp"

namespace rdma_exporter {

// The web configuration file (--web.config.file, web.config_file), in the
// format of the Prometheus exporter-toolkit so operators can reuse theirs:
// TLS for the HTTP endpoint, basic auth users, extra response headers.
// docs/configuration.md documents each key.
struct WebConfig {
  enum class ClientAuth { none, require_any, verify_if_given, require_and_verify };
  enum class TlsVersion { tls12, tls13 };

  struct Tls {
    // Files are resolved against the web configuration file's directory;
    // the inline PEM texts (cert, key, client_ca) are the alternative.
    std::string cert_file;
    std::string key_file;
    std::string client_ca_file;
    std::string cert;
    std::string key;  // a secret: never logged
    std::string client_ca;
    ClientAuth client_auth = ClientAuth::none;
    TlsVersion min_version = TlsVersion::tls12;
    TlsVersion max_version = TlsVersion::tls13;
    std::vector<std::string> cipher_suites;        // OpenSSL names, TLS 1.2
    std::vector<std::string> tls13_cipher_suites;  // OpenSSL names, TLS 1.3
    std::vector<std::string> curves;               // OpenSSL group names
    bool prefer_server_cipher_suites = true;
    // A client certificate must carry one of these as a subject alternative
    // name (DNS, IP, email or URI, matched exactly); empty: any will do.
    std::vector<std::string> client_allowed_sans;

    bool operator==(const Tls&) const = default;
  };

  // A token bucket over every request: `burst` requests at once, then one
  // more each `interval`; past it a request is answered 429. A zero
  // interval: no limit.
  struct RateLimit {
    Duration interval{0};
    int burst = 0;

    bool operator==(const RateLimit&) const = default;
  };

  std::optional<Tls> tls;                                    // absent: plain HTTP
  std::map<std::string, std::string> users;                  // user -> bcrypt hash (secrets)
  std::vector<std::pair<std::string, std::string>> headers;  // added to every response
  bool http2 = true;  // accepted; the endpoint speaks HTTP/1.1
  RateLimit rate_limit;

  bool operator==(const WebConfig&) const = default;
};

// Parses YAML text into `out` (defaults on entry). Relative file names are
// resolved against the directory of `source`. One line per problem, with
// file, line, column and key, never with a secret value; empty when valid.
std::vector<std::string> parse_web_config(const std::string& yaml_text, const std::string& source,
                                          WebConfig& out);

// Reads and parses a file; a missing or unreadable file is one problem.
std::vector<std::string> load_web_config_file(const std::string& path, WebConfig& out);

// Whether `hash` has the shape of a bcrypt hash: $2a$, $2b$ or $2y$, a cost
// from 04 to 31, and 53 characters of salt and digest.
bool is_bcrypt_hash(const std::string& hash);

}  // namespace rdma_exporter
