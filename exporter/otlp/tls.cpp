#include "exporter/otlp/tls.hpp"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/buffer.hpp>
#include <cerrno>

#include "common/file.hpp"

namespace rdma_exporter {
namespace {

namespace ssl = boost::asio::ssl;

// Erases its text when it goes: it may hold a private key.
struct SecretText {
  std::string text;
  ~SecretText() {
    if (!text.empty()) OPENSSL_cleanse(text.data(), text.size());
  }
};

Status read_pem(const char* key, const std::string& path, std::string& out) {
  auto text = read_file(path, kMaxConfigFileBytes, std::string(key) + " " + path);
  if (!text) return text.error();
  out = std::move(*text);
  return ok_status();
}

// Every certificate of a PEM text becomes a trust anchor.
Status add_trust_anchors(SSL_CTX* ctx, const std::string& pem, const std::string& what) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return Error{ENOMEM, what + ": out of memory"};
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  int count = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    const bool ok = X509_STORE_add_cert(store, cert) == 1;
    X509_free(cert);
    if (!ok) {
      BIO_free(bio);
      return Error{EINVAL, what + ": " + otlp_openssl_reason("cannot use the CA certificate")};
    }
    ++count;
  }
  BIO_free(bio);
  ERR_clear_error();  // the end of the text reads as "no start line"
  if (count == 0) return Error{EINVAL, what + ": no PEM certificate in it"};
  return ok_status();
}

}  // namespace

std::string otlp_openssl_reason(const std::string& fallback) {
  const unsigned long code = ERR_peek_error();
  std::string reason = fallback;
  if (code != 0) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof buf);
    reason = buf;
  }
  ERR_clear_error();
  return reason;
}

Result<std::shared_ptr<ssl::context>> make_otlp_tls_context(const OtlpOptions& o) {
  ERR_clear_error();
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX* h = ctx->native_handle();
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                   ssl::context::no_compression);
  SSL_CTX_set_options(h, SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_set_min_proto_version(h, TLS1_2_VERSION) != 1) {
    return Error{EINVAL, "otlp: " + otlp_openssl_reason("cannot set the TLS versions")};
  }
  ctx->set_verify_mode(ssl::verify_peer);

  if (o.ca_file.empty()) {
    boost::system::error_code ec;
    ctx->set_default_verify_paths(ec);
    if (ec) {
      return Error{EINVAL, "otlp: cannot use the system's trust store (" +
                               otlp_openssl_reason(ec.message()) + "); set otlp.ca_file"};
    }
  } else {
    std::string pem;
    if (Status s = read_pem("otlp.ca_file", o.ca_file, pem); !s) return s.error();
    if (Status s = add_trust_anchors(h, pem, "otlp.ca_file " + o.ca_file); !s) return s.error();
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
                               otlp_openssl_reason(ec.message()) + ")"};
    }
    SecretText key;
    if (Status s = read_pem("otlp.key_file", o.key_file, key.text); !s) return s.error();
    ctx->use_private_key(boost::asio::buffer(key.text), ssl::context::pem, ec);
    if (ec) {
      return Error{EINVAL, "otlp.key_file " + o.key_file + ": not a usable PEM private key (" +
                               otlp_openssl_reason(ec.message()) + ")"};
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
