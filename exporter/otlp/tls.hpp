#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "exporter/otlp/options.hpp"

namespace rdma_exporter {

// An OpenSSL client context for an https:// endpoint: TLS 1.2 at least; the
// receiver's certificate is verified against the certificates of
// `ca_file`, or the system's trust store when it is empty; the client
// certificate chain of `cert_file` and its key `key_file` (checked to
// match) for mutual TLS when set. The error names the key, the file and
// OpenSSL's reason.
Result<std::shared_ptr<boost::asio::ssl::context>> make_otlp_tls_context(
    const OtlpOptions& options);

// What make_otlp_tls_context() would fail with, one line; none when push is
// off or the endpoint is http:// (the TLS files are not used then).
std::vector<std::string> otlp_tls_problems(const OtlpOptions& options);

}  // namespace rdma_exporter
