#pragma once

// OpenSSL helpers shared by the HTTP server's TLS (exporter/http) and the
// OTLP client's (exporter/otlp).

#include <openssl/ssl.h>

#include <string>

#include "common/result.hpp"

namespace rdma_exporter {

// OpenSSL's reason for the oldest queued error (the root cause), or
// `fallback` when none is queued; the queue is cleared.
std::string openssl_reason(const std::string& fallback);

// PEM text that may hold a private key: erased when it goes.
struct SecretText {
  std::string text;
  SecretText() = default;
  SecretText(const SecretText&) = delete;
  SecretText& operator=(const SecretText&) = delete;
  ~SecretText();
};

enum class CaUse {
  trust,                  // trust anchors for the peer's certificate
  trust_and_name_to_peer  // also named to clients in the CertificateRequest
};

// Adds every certificate of the PEM text `pem` to ctx's trust store (and,
// with CaUse::trust_and_name_to_peer, to the CA names sent to clients).
// `what` names the text in errors; a text without a certificate is one.
Status add_pem_certificates(SSL_CTX* ctx, const std::string& pem, const std::string& what,
                            CaUse use);

}  // namespace rdma_exporter
