#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "exporter/otlp/http_client.hpp"

namespace rdma_exporter {

// How one export request ended: the result label of
// rdma_exporter_otlp_exports_total.
enum class OtlpExportOutcome {
  success,    // 2xx: the receiver took the payload
  retryable,  // 429, 502, 503, 504: sent again later
  permanent,  // any other status: the receiver will never take it; dropped
  network,    // no connection, no answer within otlp.timeout, a broken answer
  tls,        // https://: the handshake failed or the receiver sent a TLS alert
};
inline constexpr std::size_t kOtlpExportOutcomes = 5;

// The label value: success, retryable_error, permanent_error,
// network_error, tls_error.
const char* otlp_export_outcome_label(OtlpExportOutcome outcome);

// What a request's result means; nullopt for an aborted request (the pusher
// is stopping: nothing is counted).
std::optional<OtlpExportOutcome> classify_otlp_export(const OtlpHttpResult& result);

// Whether the payload is sent again after a delay (retryable, network, tls).
// Otherwise it leaves the queue, taken or dropped for good, and the backoff
// starts over.
bool otlp_export_retried(OtlpExportOutcome outcome);

// Seconds of a Retry-After header given in seconds (blanks around them
// allowed); nullopt for an HTTP date, an empty header or anything else.
std::optional<uint64_t> retry_after_seconds(std::string_view header);

// How long to wait before sending a retried payload again, given the
// backoff's delay for this failure: that delay, or for a retryable status
// what Retry-After asks for when longer, itself at most `max_backoff`. Never
// sooner than the backoff, so "Retry-After: 0" does not become a loop.
// Zero for an outcome that is not retried.
std::chrono::milliseconds otlp_retry_delay(OtlpExportOutcome outcome,
                                           std::chrono::milliseconds backoff,
                                           std::string_view retry_after,
                                           std::chrono::milliseconds max_backoff);

}  // namespace rdma_exporter
