#pragma once

#include <boost/system/error_code.hpp>
#include <string>

namespace rdma_exporter {

// A failed TLS handshake, in the few kinds an operator can act on:
// plain_http, protocol, client_certificate, timeout or other
// (rdma_exporter_http_tls_handshake_failures_total).
std::string tls_failure_reason(const boost::system::error_code& ec);

}  // namespace rdma_exporter
