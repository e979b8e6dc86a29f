#pragma once

#include <openssl/x509.h>

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/result.hpp"
#include "exporter/http/basic_auth.hpp"
#include "exporter/http/web_config.hpp"

namespace rdma_exporter {

// What the web configuration file turns into at run time. Loaded whole or
// not at all, so a reload either replaces it or keeps the old one; each
// connection keeps the one it was accepted with.
struct WebSecurity {
  std::shared_ptr<boost::asio::ssl::context> tls;  // null: plain HTTP
  std::shared_ptr<BasicAuth> auth;                 // null: no authentication
  std::vector<std::pair<std::string, std::string>> headers;
  WebConfig::RateLimit rate_limit;  // interval 0: no limit
  std::string tls_summary;          // versions and client certificate policy

  // For the log: what is on, never a secret.
  std::string describe() const;
};

// An OpenSSL server context: TLS 1.2 at least, no compression, no
// renegotiation, the certificate chain and key (checked to match), client
// certificate policy. The error names the file and OpenSSL's reason.
Result<std::shared_ptr<boost::asio::ssl::context>> make_tls_context(const WebConfig::Tls& tls);

// Whether a certificate carries one of `allowed` as a subject alternative
// name: a DNS name, email address or URI equal to it, or an IP address equal
// to the address it spells.
bool has_allowed_san(X509* cert, const std::vector<std::string>& allowed);

// Reads the web configuration file and everything it names. An empty path
// gives plain HTTP without authentication. One line per problem.
std::vector<std::string> load_web_security(const std::string& path,
                                           std::shared_ptr<const WebSecurity>& out);

}  // namespace rdma_exporter
