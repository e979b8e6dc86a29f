#include "exporter/otlp/export_outcome.hpp"

#include <algorithm>
#include <charconv>

namespace rdma_exporter {

using std::chrono::milliseconds;

const char* otlp_export_outcome_label(OtlpExportOutcome outcome) {
  switch (outcome) {
    case OtlpExportOutcome::success:
      return "success";
    case OtlpExportOutcome::retryable:
      return "retryable_error";
    case OtlpExportOutcome::permanent:
      return "permanent_error";
    case OtlpExportOutcome::network:
      return "network_error";
    case OtlpExportOutcome::tls:
      return "tls_error";
  }
  return "network_error";
}

std::optional<OtlpExportOutcome> classify_otlp_export(const OtlpHttpResult& result) {
  switch (result.kind) {
    case OtlpHttpResult::Kind::aborted:
      return std::nullopt;
    case OtlpHttpResult::Kind::network_error:
      return OtlpExportOutcome::network;
    case OtlpHttpResult::Kind::tls_error:
      return OtlpExportOutcome::tls;
    case OtlpHttpResult::Kind::response:
      break;
  }
  const unsigned status = result.status;
  if (status >= 200 && status < 300) return OtlpExportOutcome::success;
  if (status == 429 || status == 502 || status == 503 || status == 504) {
    return OtlpExportOutcome::retryable;
  }
  return OtlpExportOutcome::permanent;
}

bool otlp_export_retried(OtlpExportOutcome outcome) {
  return outcome == OtlpExportOutcome::retryable || outcome == OtlpExportOutcome::network ||
         outcome == OtlpExportOutcome::tls;
}

std::optional<uint64_t> retry_after_seconds(std::string_view header) {
  std::string_view v = header;
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  uint64_t seconds = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size()) return std::nullopt;
  return seconds;
}

milliseconds otlp_retry_delay(OtlpExportOutcome outcome, milliseconds backoff,
                              std::string_view retry_after, milliseconds max_backoff) {
  if (!otlp_export_retried(outcome)) return milliseconds(0);
  if (outcome != OtlpExportOutcome::retryable) return backoff;
  const auto seconds = retry_after_seconds(retry_after);
  if (!seconds) return backoff;
  const milliseconds asked =
      *seconds > 1'000'000 ? max_backoff : milliseconds(static_cast<long long>(*seconds) * 1000);
  return std::max(backoff, std::min(asked, max_backoff));
}

}  // namespace rdma_exporter
