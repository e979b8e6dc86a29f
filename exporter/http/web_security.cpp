#include "exporter/http/web_security.hpp"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/address.hpp>
#include <cerrno>
#include <cstring>

#include "common/file.hpp"
#include "exporter/config.hpp"
#include "exporter/openssl.hpp"

namespace rdma_exporter {
namespace {

namespace ssl = boost::asio::ssl;

// PEM text from a file or given inline; `what` names it in errors.
Status pem_text(const std::string& file, const std::string& inline_text, std::string& out,
                std::string& what, const char* inline_key) {
  if (!file.empty()) {
    what = file;
    auto text = read_file(file, kMaxConfigFileBytes, file);
    if (!text) return text.error();
    out = std::move(*text);
    return ok_status();
  }
  what = std::string("tls_server_config.") + inline_key;
  out = inline_text;
  return ok_status();
}

const char* version_name(WebConfig::TlsVersion v) {
  return v == WebConfig::TlsVersion::tls12 ? "TLS 1.2" : "TLS 1.3";
}

const char* client_auth_name(WebConfig::ClientAuth a) {
  switch (a) {
    case WebConfig::ClientAuth::none:
      return "NoClientCert";
    case WebConfig::ClientAuth::require_any:
      return "RequireAnyClientCert";
    case WebConfig::ClientAuth::verify_if_given:
      return "VerifyClientCertIfGiven";
    case WebConfig::ClientAuth::require_and_verify:
      return "RequireAndVerifyClientCert";
  }
  return "?";
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ":") + i;
  return out;
}

}  // namespace

std::string WebSecurity::describe() const {
  std::string s = tls ? "TLS (" + tls_summary + ")" : "plain HTTP";
  s += auth ? ", basic auth for " + std::to_string(auth->user_count()) + " user(s)"
            : ", no authentication";
  if (rate_limit.interval.count() > 0) {
    s += ", at most " + std::to_string(rate_limit.burst) + " request(s) at once then one every " +
         std::to_string(rate_limit.interval.count()) + "ms";
  }
  return s;
}

bool has_allowed_san(X509* cert, const std::vector<std::string>& allowed) {
  if (cert == nullptr) return false;
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return false;
  bool found = false;
  for (int i = 0; i < sk_GENERAL_NAME_num(names) && !found; ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    if (name->type == GEN_DNS || name->type == GEN_EMAIL || name->type == GEN_URI) {
      const ASN1_IA5STRING* text = name->d.ia5;
      const std::string value(reinterpret_cast<const char*>(ASN1_STRING_get0_data(text)),
                              static_cast<std::size_t>(ASN1_STRING_length(text)));
      found = std::find(allowed.begin(), allowed.end(), value) != allowed.end();
    } else if (name->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* bytes = name->d.ip;
      const int length = ASN1_STRING_length(bytes);
      const unsigned char* data = ASN1_STRING_get0_data(bytes);
      boost::asio::ip::address ip;
      if (length == 4) {
        boost::asio::ip::address_v4::bytes_type b;
        std::copy(data, data + 4, b.begin());
        ip = boost::asio::ip::address_v4(b);
      } else if (length == 16) {
        boost::asio::ip::address_v6::bytes_type b;
        std::copy(data, data + 16, b.begin());
        ip = boost::asio::ip::address_v6(b);
      } else {
        continue;
      }
      for (const auto& a : allowed) {
        boost::system::error_code ec;
        const auto want = boost::asio::ip::make_address(a, ec);
        if (!ec && want == ip) found = true;
      }
    }
  }
  GENERAL_NAMES_free(names);
  return found;
}

namespace {

// The protocol: versions, cipher suites, curves, no renegotiation or
// compression, and the session context resumption needs.
Status set_protocol(ssl::context& ctx, const WebConfig::Tls& tls) {
  SSL_CTX* h = ctx.native_handle();
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                  ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                  ssl::context::single_dh_use | ssl::context::no_compression);
  SSL_CTX_set_options(h, SSL_OP_NO_RENEGOTIATION);
  if (tls.prefer_server_cipher_suites) SSL_CTX_set_options(h, SSL_OP_CIPHER_SERVER_PREFERENCE);
  auto proto = [](WebConfig::TlsVersion v) {
    return v == WebConfig::TlsVersion::tls12 ? TLS1_2_VERSION : TLS1_3_VERSION;
  };
  if (SSL_CTX_set_min_proto_version(h, proto(tls.min_version)) != 1 ||
      SSL_CTX_set_max_proto_version(h, proto(tls.max_version)) != 1) {
    return Error{EINVAL, "tls_server_config: " + openssl_reason("cannot set the TLS versions")};
  }
  if (!tls.cipher_suites.empty() &&
      SSL_CTX_set_cipher_list(h, join(tls.cipher_suites).c_str()) != 1) {
    return Error{EINVAL, "tls_server_config.cipher_suites: " +
                             openssl_reason("OpenSSL accepts none of these suites")};
  }
  if (!tls.tls13_cipher_suites.empty() &&
      SSL_CTX_set_ciphersuites(h, join(tls.tls13_cipher_suites).c_str()) != 1) {
    return Error{EINVAL, "tls_server_config.cipher_suites: " +
                             openssl_reason("OpenSSL accepts none of the TLS 1.3 suites")};
  }
  if (!tls.curves.empty() && SSL_CTX_set1_groups_list(h, join(tls.curves).c_str()) != 1) {
    return Error{EINVAL,
                 "tls_server_config.curve_preferences: " + openssl_reason("unusable curves")};
  }
  // Needed for session resumption when client certificates are checked.
  static constexpr unsigned char kSessionContext[] = "rdma_exporter";
  SSL_CTX_set_session_id_context(h, kSessionContext, sizeof kSessionContext - 1);
  return ok_status();
}

// The server's certificate chain and its private key, from files or inline.
Status use_identity(ssl::context& ctx, const WebConfig::Tls& tls) {
  SSL_CTX* h = ctx.native_handle();
  std::string what;
  SecretText cert;
  if (Status s = pem_text(tls.cert_file, tls.cert, cert.text, what, "cert"); !s) return s.error();
  boost::system::error_code ec;
  ctx.use_certificate_chain(boost::asio::buffer(cert.text), ec);
  if (ec) {
    return Error{EINVAL, what + ": not a usable PEM certificate chain (" +
                             openssl_reason(ec.message()) + ")"};
  }
  SecretText key;
  if (Status s = pem_text(tls.key_file, tls.key, key.text, what, "key"); !s) return s.error();
  ctx.use_private_key(boost::asio::buffer(key.text), ssl::context::pem, ec);
  if (ec) {
    return Error{EINVAL, what + ": not a usable PEM private key, or not the certificate's (" +
                             openssl_reason(ec.message()) + ")"};
  }
  if (SSL_CTX_check_private_key(h) != 1) {
    return Error{EINVAL, what + ": the private key does not match the certificate"};
  }
  return ok_status();
}

// Which client certificates are asked for and how they are checked: the
// client CA, the mode, and the names a client's own certificate must hold.
Status verify_clients(ssl::context& ctx, const WebConfig::Tls& tls) {
  std::string what;
  using CA = WebConfig::ClientAuth;
  if (!tls.client_ca_file.empty() || !tls.client_ca.empty()) {
    std::string ca;
    if (Status s = pem_text(tls.client_ca_file, tls.client_ca, ca, what, "client_ca"); !s) {
      return s.error();
    }
    if (Status s =
            add_pem_certificates(ctx.native_handle(), ca, what, CaUse::trust_and_name_to_peer);
        !s)
      return s.error();
  }
  switch (tls.client_auth) {
    case CA::none:
      ctx.set_verify_mode(ssl::verify_none);
      break;
    case CA::require_any:
      // Any certificate will do, as in Go: the chain is not checked.
      ctx.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
      ctx.set_verify_callback([](bool, ssl::verify_context&) { return true; });
      break;
    case CA::verify_if_given:
      ctx.set_verify_mode(ssl::verify_peer);
      break;
    case CA::require_and_verify:
      ctx.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
      break;
  }
  // The client's own certificate (depth 0) must name an allowed client; the
  // handshake fails with an alert otherwise. With RequireAnyClientCert the
  // chain stays unchecked, as above.
  if (!tls.client_allowed_sans.empty()) {
    const bool any = tls.client_auth == CA::require_any;
    ctx.set_verify_callback(
        [allowed = tls.client_allowed_sans, any](bool preverified, ssl::verify_context& vc) {
          X509_STORE_CTX* store = vc.native_handle();
          if (!preverified && !any) return false;
          if (X509_STORE_CTX_get_error_depth(store) != 0) return true;
          if (has_allowed_san(X509_STORE_CTX_get_current_cert(store), allowed)) return true;
          X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION);
          return false;
        });
  }
  return ok_status();
}

}  // namespace

Result<std::shared_ptr<ssl::context>> make_tls_context(const WebConfig::Tls& tls) {
  ERR_clear_error();
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  if (Status s = set_protocol(*ctx, tls); !s) return s.error();
  if (Status s = use_identity(*ctx, tls); !s) return s.error();
  if (Status s = verify_clients(*ctx, tls); !s) return s.error();
  ERR_clear_error();
  return ctx;
}

std::vector<std::string> load_web_security(const std::string& path,
                                           std::shared_ptr<const WebSecurity>& out) {
  if (path.empty()) {
    out = std::make_shared<const WebSecurity>();
    return {};
  }
  WebConfig config;
  auto errors = load_web_config_file(path, config);
  if (!errors.empty()) return errors;
  auto security = std::make_shared<WebSecurity>();
  if (config.tls) {
    auto ctx = make_tls_context(*config.tls);
    if (!ctx) return {path + ": " + ctx.error().message};
    security->tls = std::move(ctx.value());
  }
  if (!config.users.empty()) security->auth = std::make_shared<BasicAuth>(std::move(config.users));
  security->headers = std::move(config.headers);
  security->rate_limit = config.rate_limit;
  if (config.tls) {
    // The versions and the client certificate policy, for the log line.
    security->tls_summary = std::string(version_name(config.tls->min_version)) + " to " +
                            version_name(config.tls->max_version) + ", client certificates " +
                            client_auth_name(config.tls->client_auth);
    if (!config.tls->client_allowed_sans.empty()) {
      security->tls_summary +=
          ", " + std::to_string(config.tls->client_allowed_sans.size()) + " allowed client SAN(s)";
    }
  }
  out = std::move(security);
  return {};
}

}  // namespace rdma_exporter
