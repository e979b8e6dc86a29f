#include "exporter/http/web_config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "common/file.hpp"
#include "common/text.hpp"
#include "common/yaml_text.hpp"
#include "common/yaml_walker.hpp"
#include "exporter/config.hpp"

namespace rdma_exporter {
namespace {

// Go crypto/tls cipher suite names -> OpenSSL names. TLS 1.3 suites keep
// their IANA names in both.
struct CipherName {
  const char* go;
  const char* openssl;
  bool tls13;
};
constexpr CipherName kCiphers[] = {
    {"TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA", false},
    {"TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA", false},
    {"TLS_RSA_WITH_AES_128_CBC_SHA256", "AES128-SHA256", false},
    {"TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256", false},
    {"TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384", false},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA-AES128-SHA", false},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA-AES256-SHA", false},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA", false},
    {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA", false},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "ECDHE-ECDSA-AES128-SHA256", false},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA-AES128-SHA256", false},
    {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256", false},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256", false},
    {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384", false},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384", false},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305", false},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305", false},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA-CHACHA20-POLY1305", false},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "ECDHE-ECDSA-CHACHA20-POLY1305", false},
    {"TLS_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256", true},
    {"TLS_AES_256_GCM_SHA384", "TLS_AES_256_GCM_SHA384", true},
    {"TLS_CHACHA20_POLY1305_SHA256", "TLS_CHACHA20_POLY1305_SHA256", true},
};

// Suites Go knows that are broken (RC4, 3DES): named, and refused.
constexpr const char* kInsecureCiphers[] = {
    "TLS_RSA_WITH_RC4_128_SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
};

struct CurveName {
  const char* go;
  const char* openssl;
};
constexpr CurveName kCurves[] = {
    {"CurveP256", "P-256"}, {"CurveP384", "P-384"}, {"CurveP521", "P-521"}, {"X25519", "X25519"}};

// The headers exporter-toolkit allows, and the values it allows for some.
struct HeaderRule {
  const char* name;
  std::initializer_list<const char*> values;  // empty: any value
};
const HeaderRule kHeaders[] = {
    {"Content-Security-Policy", {}},         {"X-Frame-Options", {"deny", "sameorigin"}},
    {"X-Content-Type-Options", {"nosniff"}}, {"X-XSS-Protection", {}},
    {"Strict-Transport-Security", {}},
};

std::string client_auth_problem(const std::string& v, WebConfig::ClientAuth& out) {
  using CA = WebConfig::ClientAuth;
  static const std::pair<const char*, CA> kModes[] = {
      {"NoClientCert", CA::none},
      {"RequestClientCert", CA::none},  // Go: asks, never checks; the same as none here
      {"RequireAnyClientCert", CA::require_any},
      {"VerifyClientCertIfGiven", CA::verify_if_given},
      {"RequireAndVerifyClientCert", CA::require_and_verify},
  };
  for (const auto& [name, mode] : kModes) {
    if (v == name) {
      out = mode;
      return {};
    }
  }
  return one_of(v, {"NoClientCert", "RequireAnyClientCert", "VerifyClientCertIfGiven",
                    "RequireAndVerifyClientCert"});
}

std::string version_problem(const std::string& v, WebConfig::TlsVersion& out) {
  if (v == "TLS12") {
    out = WebConfig::TlsVersion::tls12;
  } else if (v == "TLS13") {
    out = WebConfig::TlsVersion::tls13;
  } else if (v == "TLS10" || v == "TLS11") {
    return v +
           " is not accepted: TLS 1.2 is the oldest version this exporter speaks "
           "(expected TLS12 or TLS13)";
  } else {
    return one_of(v, {"TLS12", "TLS13"});
  }
  return {};
}

// A file name, resolved against the web configuration file's directory.
Walker::Field file_field(Walker& w, const std::string& source, std::string& dst) {
  return [&w, &source, &dst](const YAML::Node& n, const std::string& key) {
    if (!n.IsScalar() || n.Scalar().empty()) return w.error_at(n, key, "expected a file name");
    dst = resolve_relative(n.Scalar(), source);
  };
}

// An inline PEM text; a parse error never quotes it (it may be a key).
Walker::Field pem_field(Walker& w, std::string& dst) {
  return [&w, &dst](const YAML::Node& n, const std::string& key) {
    if (!n.IsScalar() || n.Scalar().empty()) {
      return w.error_at(n, key, "expected PEM text (the value is not shown)");
    }
    dst = n.Scalar();
  };
}

// cipher_suites: Go crypto/tls names into the OpenSSL lists of `tls`
// (TLS 1.2 and TLS 1.3 apart); broken and unknown suites are named.
Walker::Field cipher_suites_field(Walker& w, WebConfig::Tls& tls) {
  return [&w, &tls](const YAML::Node& n, const std::string& key) {
    if (n.IsNull()) return;
    if (!n.IsSequence()) return w.error_at(n, key, "expected a list of cipher suite names");
    for (const auto& item : n) {
      const std::string name = item.IsScalar() ? item.Scalar() : std::string();
      auto it = std::find_if(std::begin(kCiphers), std::end(kCiphers),
                             [&](const CipherName& c) { return name == c.go; });
      if (it != std::end(kCiphers)) {
        (it->tls13 ? tls.tls13_cipher_suites : tls.cipher_suites).emplace_back(it->openssl);
      } else if (std::find(std::begin(kInsecureCiphers), std::end(kInsecureCiphers), name) !=
                 std::end(kInsecureCiphers)) {
        w.error_at(item, key, "\"" + name + "\" is insecure (RC4 or 3DES) and not supported");
      } else {
        w.error_at(item, key,
                   "unknown cipher suite \"" + name +
                       "\" (expected a Go crypto/tls name such as "
                       "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)");
      }
    }
  };
}

// curve_preferences: Go curve names into OpenSSL's.
Walker::Field curves_field(Walker& w, WebConfig::Tls& tls) {
  return [&w, &tls](const YAML::Node& n, const std::string& key) {
    if (n.IsNull()) return;
    if (!n.IsSequence()) return w.error_at(n, key, "expected a list of curve names");
    for (const auto& item : n) {
      const std::string name = item.IsScalar() ? item.Scalar() : std::string();
      auto it = std::find_if(std::begin(kCurves), std::end(kCurves),
                             [&](const CurveName& c) { return name == c.go; });
      if (it == std::end(kCurves)) {
        w.error_at(item, key, one_of(name, {"CurveP256", "CurveP384", "CurveP521", "X25519"}));
      } else {
        tls.curves.emplace_back(it->openssl);
      }
    }
  };
}

// http_server_config.headers: only the headers exporter-toolkit allows,
// with the values it allows, and no control characters.
Walker::Field headers_field(Walker& w, WebConfig& out) {
  return [&w, &out](const YAML::Node& n, const std::string& key) {
    if (n.IsNull()) return;
    if (!n.IsMap()) return w.error_at(n, key, "expected a mapping of header names to values");
    for (const auto& kv : n) {
      const std::string name = kv.first.Scalar();
      const std::string sub = key_path(key, name);
      auto rule = std::find_if(std::begin(kHeaders), std::end(kHeaders),
                               [&](const HeaderRule& r) { return equals_nocase(name, r.name); });
      if (rule == std::end(kHeaders)) {
        std::string known;
        for (const auto& r : kHeaders) known += (known.empty() ? "" : ", ") + std::string(r.name);
        w.error_at(kv.first, sub, "unknown header (expected one of: " + known + ")");
        continue;
      }
      if (kv.second.IsNull()) continue;  // blank: unset
      if (!kv.second.IsScalar()) {
        w.error_at(kv.second, sub, "expected a string");
        continue;
      }
      const std::string value = kv.second.Scalar();
      if (value.empty()) continue;
      if (std::any_of(value.begin(), value.end(), [](char c) {
            const auto u = static_cast<unsigned char>(c);
            return (u < 0x20 && c != '\t') || u == 0x7f;
          })) {
        w.error_at(kv.second, sub, "the value holds a control character");
        continue;
      }
      if (rule->values.size() != 0 &&
          std::none_of(rule->values.begin(), rule->values.end(),
                       [&](const char* v) { return equals_nocase(value, v); })) {
        std::string allowed;
        for (const char* v : rule->values)
          allowed += (allowed.empty() ? "" : " or ") + std::string(v);
        std::string message = "expected " + allowed;
        message += ", got \"";
        message += value;
        message += '"';
        w.error_at(kv.second, sub, message);
        continue;
      }
      out.headers.emplace_back(rule->name, value);
    }
  };
}

// basic_auth_users: user names without ':' to bcrypt hashes; a bad hash is
// never quoted.
Walker::Field users_field(Walker& w, WebConfig& out) {
  return [&w, &out](const YAML::Node& n, const std::string& key) {
    if (n.IsNull()) return;
    if (!n.IsMap()) return w.error_at(n, key, "expected a mapping of user names to bcrypt hashes");
    for (const auto& kv : n) {
      const std::string user = kv.first.Scalar();
      const std::string sub = key_path(key, user);
      if (user.empty() || user.find(':') != std::string::npos) {
        w.error_at(kv.first, sub, "a user name must be non-empty and hold no ':'");
        continue;
      }
      if (!kv.second.IsScalar() || !is_bcrypt_hash(kv.second.Scalar())) {
        w.error_at(kv.second, sub,
                   "expected a bcrypt hash ($2a$, $2b$ or $2y$, as made by htpasswd -nBC 10); "
                   "the value is not shown");
        continue;
      }
      out.users[user] = kv.second.Scalar();
    }
  };
}

// tls_server_config's keys, each checked alone. True when one was wrong.
bool parse_tls_keys(Walker& w, const YAML::Node& n, const std::string& p, const std::string& source,
                    WebConfig::Tls& tls) {
  const Walker::Section section = w.section();
  std::string choice;
  w.mapping(
      n, p,
      {{"cert_file", file_field(w, source, tls.cert_file)},
       {"key_file", file_field(w, source, tls.key_file)},
       {"client_ca_file", file_field(w, source, tls.client_ca_file)},
       {"cert", pem_field(w, tls.cert)},
       {"key", pem_field(w, tls.key)},
       {"client_ca", pem_field(w, tls.client_ca)},
       {"client_auth_type", w.optional_string_into(choice,
                                                   [&tls](const std::string& v) {
                                                     return client_auth_problem(v, tls.client_auth);
                                                   })},
       {"min_version",
        w.optional_string_into(
            choice, [&tls](const std::string& v) { return version_problem(v, tls.min_version); })},
       {"max_version",
        w.optional_string_into(
            choice, [&tls](const std::string& v) { return version_problem(v, tls.max_version); })},
       {"cipher_suites", cipher_suites_field(w, tls)},
       {"curve_preferences", curves_field(w, tls)},
       {"prefer_server_cipher_suites", w.boolean(tls.prefer_server_cipher_suites)},
       {"client_allowed_sans", w.string_list(tls.client_allowed_sans, [](const std::string& san) {
          return san.empty() ? std::string("an empty name") : std::string();
        })}});
  return section.failed();
}

// rate_limit: an interval and a burst of at least 1 when it is set.
void parse_rate_limit(Walker& w, const YAML::Node& n, const std::string& p, WebConfig& out) {
  const Walker::Section section = w.section();
  w.mapping(n, p,
            {{"interval", w.duration(out.rate_limit.interval)},
             {"burst", w.integer(out.rate_limit.burst, 0, 1000000)}});
  if (!section.failed() && out.rate_limit.interval.count() > 0 && out.rate_limit.burst < 1) {
    w.error_at(n, p + ".burst",
               "must be at least 1 when rate_limit.interval is set (a burst of 0 "
               "would refuse every request)");
  }
}

// How tls_server_config's keys go together, checked once each is valid:
// a certificate and a key, each from a file or inline, not both; a client
// CA exactly when client certificates are verified; SANs only with client
// certificates; versions in order.
void check_tls_keys_together(Walker& w, const YAML::Node& tls_node, const WebConfig::Tls& tls) {
  const std::string p = "tls_server_config";
  auto need_one = [&](const std::string& from_file, const std::string& inline_text,
                      const char* file_key, const char* inline_key) {
    if (!from_file.empty() && !inline_text.empty()) {
      w.error_at(tls_node, p, std::string("give ") + file_key + " or " + inline_key + ", not both");
    } else if (from_file.empty() && inline_text.empty()) {
      w.error_at(tls_node, p, std::string("missing ") + file_key + " (or " + inline_key + ")");
    }
  };
  need_one(tls.cert_file, tls.cert, "cert_file", "cert");
  need_one(tls.key_file, tls.key, "key_file", "key");
  const bool has_ca = !tls.client_ca_file.empty() || !tls.client_ca.empty();
  if (!tls.client_ca_file.empty() && !tls.client_ca.empty()) {
    w.error_at(tls_node, p, "give client_ca_file or client_ca, not both");
  }
  using CA = WebConfig::ClientAuth;
  if (has_ca && tls.client_auth == CA::none) {
    w.error_at(tls_node, p,
               "a client CA is configured but client_auth_type does not check client "
               "certificates (use RequireAndVerifyClientCert)");
  }
  if (!has_ca &&
      (tls.client_auth == CA::verify_if_given || tls.client_auth == CA::require_and_verify)) {
    w.error_at(tls_node, p,
               "client_auth_type verifies client certificates: it needs "
               "client_ca_file (or client_ca)");
  }
  if (!tls.client_allowed_sans.empty() && tls.client_auth != CA::require_and_verify &&
      tls.client_auth != CA::require_any) {
    w.error_at(tls_node, p,
               "client_allowed_sans needs client certificates: set client_auth_type to "
               "RequireAndVerifyClientCert (or RequireAnyClientCert)");
  }
  if (tls.min_version > tls.max_version) {
    w.error_at(tls_node, p, "min_version is newer than max_version");
  }
}

}  // namespace

bool is_bcrypt_hash(const std::string& h) {
  // $2b$10$ + 22 characters of salt + 31 of digest
  if (h.size() != 60 || h[0] != '$' || h[1] != '2' || h[3] != '$' || h[6] != '$') return false;
  if (h[2] != 'a' && h[2] != 'b' && h[2] != 'y') return false;
  if (!std::isdigit(static_cast<unsigned char>(h[4])) ||
      !std::isdigit(static_cast<unsigned char>(h[5]))) {
    return false;
  }
  const int cost = (h[4] - '0') * 10 + (h[5] - '0');
  if (cost < 4 || cost > 31) return false;
  return std::all_of(h.begin() + 7, h.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '/';
  });
}

std::vector<std::string> parse_web_config(const std::string& yaml_text, const std::string& source,
                                          WebConfig& out) {
  Walker w(source);
  YAML::Node root;
  try {
    root = load_yaml(yaml_text);
  } catch (const YAML::Exception& e) {
    w.error(e.mark, "(syntax)", e.msg);
    return w.take();
  }

  WebConfig::Tls tls;
  YAML::Node tls_node;
  bool tls_failed = false;  // a problem was found inside tls_server_config
  w.mapping(
      root, "",
      {{"tls_server_config",
        [&](const YAML::Node& n, const std::string& p) {
          tls_node = n;
          tls_failed = parse_tls_keys(w, n, p, source, tls);
        }},
       {"http_server_config",
        [&](const YAML::Node& n, const std::string& p) {
          w.mapping(n, p, {{"http2", w.boolean(out.http2)}, {"headers", headers_field(w, out)}});
        }},
       {"basic_auth_users", users_field(w, out)},
       {"rate_limit",
        [&](const YAML::Node& n, const std::string& p) { parse_rate_limit(w, n, p, out); }}});

  // tls_server_config with no key at all means plain HTTP, as in
  // exporter-toolkit.
  if (tls_node && tls_node.IsMap() && tls_node.size() > 0 && !tls_failed) {
    check_tls_keys_together(w, tls_node, tls);
    out.tls = std::move(tls);
  }
  return w.take();
}

std::vector<std::string> load_web_config_file(const std::string& path, WebConfig& out) {
  auto text = read_file(path, kMaxConfigFileBytes, path + ": cannot read web configuration file");
  if (!text) return {text.error().message};
  return parse_web_config(*text, path, out);
}

}  // namespace rdma_exporter
