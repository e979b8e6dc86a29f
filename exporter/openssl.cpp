#include "exporter/openssl.hpp"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>

namespace rdma_exporter {

std::string openssl_reason(const std::string& fallback) {
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

SecretText::~SecretText() {
  if (!text.empty()) OPENSSL_cleanse(text.data(), text.size());
}

Status add_pem_certificates(SSL_CTX* ctx, const std::string& pem, const std::string& what,
                            CaUse use) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return Error{ENOMEM, what + ": out of memory"};
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  int count = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    const bool ok = X509_STORE_add_cert(store, cert) == 1 &&
                    (use == CaUse::trust || SSL_CTX_add_client_CA(ctx, cert) == 1);
    X509_free(cert);
    if (!ok) {
      BIO_free(bio);
      return Error{EINVAL, what + ": " + openssl_reason("cannot use the CA certificate")};
    }
    ++count;
  }
  BIO_free(bio);
  ERR_clear_error();  // the end of the text reads as "no start line"
  if (count == 0) return Error{EINVAL, what + ": no PEM certificate in it"};
  return ok_status();
}

}  // namespace rdma_exporter
