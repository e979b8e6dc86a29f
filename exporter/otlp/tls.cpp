#include "exporter/otlp/tls.hpp"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/buffer.hpp>
#include <cerrno>

#include "common/file.hpp"
#include "exporter/openssl.hpp"

namespace rdma_exporter {
namespace {

namespace ssl = boost::asio::ssl;

Status read_pem(const char* key, const std::string& path, std::string& out) {
  auto text = read_file(path, kMaxConfigFileBytes, std::string(key) + " " + path);
  if (!text) return text.error();
  out = std::move(*text);
  return ok_status();
}

}  // namespace

Result<std::shared_ptr<ssl::context>> make_otlp_tls_context(const OtlpOptions& o) {
  ERR_clear_error();
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX* h = ctx->native_handle();
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                   ssl::context::no_compression);
  SSL_CTX_set_options(h, SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_set_min_proto_version(h, TLS1_2_VERSION) != 1) {
    return Error{EINVAL, "otlp: " + openssl_reason("cannot set the TLS versions")};
  }
  ctx->set_verify_mode(ssl::verify_peer);

  if (o.ca_file.empty()) {
    boost::system::error_code ec;
    ctx->set_default_verify_paths(ec);
    if (ec) {
      return Error{EINVAL, "otlp: cannot use the system's trust store (" +
                               openssl_reason(ec.message()) + "); set otlp.ca_file"};
    }
  } else {
    std::string pem;
    if (Status s = read_pem("otlp.ca_file", o.ca_file, pem); !s) return s.error();
    if (Status s = add_pem_certificates(h, pem, "otlp.ca_file " + o.ca_file, CaUse::trust); !s)
      return s.error();
  }

  if (!o.cert_file.empty() || !o.key_file.empty()) {
    if (o.cert_file.empty() || o.key_file.empty()) {
      return Error{EINVAL,
                   "otlp: a client certificate needs both otlp.cert_file and "
                   "otlp.key_file"};
    }
    SecretText cert;
    if (Status s = read_pem("otlp.cert_file", o.cert_file, cert.text); !s) return s.error();
    boost::system::error_code ec;
    ctx->use_certificate_chain(boost::asio::buffer(cert.text), ec);
    if (ec) {
      return Error{EINVAL, "otlp.cert_file " + o.cert_file +
                               ": not a usable PEM certificate chain (" +
                               openssl_reason(ec.message()) + ")"};
    }
    SecretText key;
    if (Status s = read_pem("otlp.key_file", o.key_file, key.text); !s) return s.error();
    ctx->use_private_key(boost::asio::buffer(key.text), ssl::context::pem, ec);
    if (ec) {
      return Error{EINVAL, "otlp.key_file " + o.key_file + ": not a usable PEM private key (" +
                               openssl_reason(ec.message()) + ")"};
    }
    if (SSL_CTX_check_private_key(h) != 1) {
      ERR_clear_error();
      return Error{EINVAL, "otlp.key_file " + o.key_file +
                               ": the private key does not match the certificate of "
                               "otlp.cert_file"};
    }
  }
  ERR_clear_error();
  return ctx;
}

std::vector<std::string> otlp_tls_problems(const OtlpOptions& o) {
  OtlpEndpoint endpoint;
  if (!o.enabled || !parse_otlp_endpoint(o.endpoint, endpoint).empty() || !endpoint.tls) {
    return {};
  }
  auto ctx = make_otlp_tls_context(o);
  if (!ctx) return {ctx.error().message};
  return {};
}

}  // namespace rdma_exporter
