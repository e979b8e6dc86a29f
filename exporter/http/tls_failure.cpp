#include "exporter/http/tls_failure.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core/error.hpp>

namespace rdma_exporter {

std::string tls_failure_reason(const boost::system::error_code& ec) {
  if (ec == boost::beast::error::timeout) return "timeout";
  if (ec.category() != boost::asio::error::get_ssl_category()) return "other";
  switch (ERR_GET_REASON(static_cast<unsigned long>(ec.value()))) {
    case SSL_R_HTTP_REQUEST:
    case SSL_R_HTTPS_PROXY_REQUEST:
      return "plain_http";
    case SSL_R_UNSUPPORTED_PROTOCOL:
    case SSL_R_UNSUPPORTED_SSL_VERSION:
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_VERSION_TOO_LOW:
    case SSL_R_UNKNOWN_PROTOCOL:
    case SSL_R_NO_PROTOCOLS_AVAILABLE:
    case SSL_R_NO_SHARED_CIPHER:
    case SSL_R_NO_SHARED_GROUPS:
    case SSL_R_NO_SUITABLE_SIGNATURE_ALGORITHM:
      return "protocol";
    case SSL_R_CERTIFICATE_VERIFY_FAILED:
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
    case SSL_R_NO_CERTIFICATES_RETURNED:
      return "client_certificate";
    default:
      return "other";
  }
}

}  // namespace rdma_exporter
