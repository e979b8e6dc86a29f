// exporter/otlp/export_outcome: what each answer (or its absence) means for
// the payload and how long the pusher waits before sending it again, as
// tables, without a receiver or a thread.

#include "exporter/otlp/export_outcome.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace rdma_exporter {
namespace {

using std::chrono::milliseconds;
using Kind = OtlpHttpResult::Kind;
using O = OtlpExportOutcome;

OtlpHttpResult result(Kind kind, unsigned status = 0, std::string retry_after = "") {
  OtlpHttpResult r;
  r.kind = kind;
  r.status = status;
  r.retry_after = std::move(retry_after);
  r.body = "body " + std::to_string(status);
  r.error = "error " + std::to_string(status);
  return r;
}

TEST(OtlpExportOutcome, ClassifiesEveryKindAndStatus) {
  struct Row {
    Kind kind;
    unsigned status;
    std::optional<O> outcome;
  };
  const std::vector<Row> rows = {
      {Kind::aborted, 0, std::nullopt},
      {Kind::aborted, 200, std::nullopt},  // a status left over counts for nothing
      {Kind::network_error, 0, O::network},
      {Kind::network_error, 503, O::network},
      {Kind::tls_error, 0, O::tls},
      {Kind::response, 200, O::success},
      {Kind::response, 202, O::success},
      {Kind::response, 204, O::success},
      {Kind::response, 299, O::success},
      {Kind::response, 199, O::permanent},
      {Kind::response, 300, O::permanent},
      {Kind::response, 301, O::permanent},
      {Kind::response, 400, O::permanent},
      {Kind::response, 401, O::permanent},
      {Kind::response, 404, O::permanent},
      {Kind::response, 408, O::permanent},
      {Kind::response, 413, O::permanent},
      {Kind::response, 428, O::permanent},
      {Kind::response, 429, O::retryable},
      {Kind::response, 430, O::permanent},
      {Kind::response, 500, O::permanent},
      {Kind::response, 501, O::permanent},
      {Kind::response, 502, O::retryable},
      {Kind::response, 503, O::retryable},
      {Kind::response, 504, O::retryable},
      {Kind::response, 505, O::permanent},
      {Kind::response, 0, O::permanent},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(classify_otlp_export(result(row.kind, row.status)), row.outcome)
        << "kind " << static_cast<int>(row.kind) << " status " << row.status;
  }
}

TEST(OtlpExportOutcome, RetriesRetryableNetworkAndTlsOnly) {
  EXPECT_FALSE(otlp_export_retried(O::success));
  EXPECT_TRUE(otlp_export_retried(O::retryable));
  EXPECT_FALSE(otlp_export_retried(O::permanent));
  EXPECT_TRUE(otlp_export_retried(O::network));
  EXPECT_TRUE(otlp_export_retried(O::tls));
}

TEST(OtlpExportOutcome, LabelsAreTheMetricsResultValues) {
  EXPECT_STREQ(otlp_export_outcome_label(O::success), "success");
  EXPECT_STREQ(otlp_export_outcome_label(O::retryable), "retryable_error");
  EXPECT_STREQ(otlp_export_outcome_label(O::permanent), "permanent_error");
  EXPECT_STREQ(otlp_export_outcome_label(O::network), "network_error");
  EXPECT_STREQ(otlp_export_outcome_label(O::tls), "tls_error");
  // The pusher counts by the enumerator's value: one slot each.
  std::set<std::string> labels;
  for (std::size_t i = 0; i < kOtlpExportOutcomes; ++i) {
    labels.insert(otlp_export_outcome_label(static_cast<O>(i)));
  }
  EXPECT_EQ(labels.size(), kOtlpExportOutcomes);
  EXPECT_EQ(static_cast<std::size_t>(O::tls) + 1, kOtlpExportOutcomes);
}

TEST(OtlpExportOutcome, RetryAfterSeconds) {
  struct Row {
    std::string header;
    std::optional<uint64_t> seconds;
  };
  const std::vector<Row> rows = {
      {"0", 0},
      {"7", 7},
      {"120", 120},
      {" 5\t", 5},
      {"\t 3600 ", 3600},
      {"18446744073709551615", 18446744073709551615ULL},
      {"18446744073709551616", std::nullopt},  // past uint64
      {"", std::nullopt},
      {"  ", std::nullopt},
      {"-1", std::nullopt},
      {"+1", std::nullopt},
      {"1.5", std::nullopt},
      {"5s", std::nullopt},
      {"5 5", std::nullopt},
      {"Wed, 21 Oct 2015 07:28:00 GMT", std::nullopt},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(retry_after_seconds(row.header), row.seconds) << "'" << row.header << "'";
  }
}

TEST(OtlpExportOutcome, RetryDelay) {
  struct Row {
    O outcome;
    long long backoff_ms;
    std::string retry_after;
    long long max_ms;
    long long delay_ms;
  };
  const std::vector<Row> rows = {
      // Not retried: no wait, whatever the receiver asked.
      {O::success, 1500, "", 30000, 0},
      {O::success, 1500, "9", 30000, 0},
      {O::permanent, 1700, "9", 30000, 0},
      // Network and TLS errors: the backoff's delay; no Retry-After there.
      {O::network, 1100, "", 30000, 1100},
      {O::network, 1100, "9", 30000, 1100},
      {O::tls, 2300, "9", 30000, 2300},
      // Retryable: the longer of the backoff and Retry-After...
      {O::retryable, 1300, "", 30000, 1300},
      {O::retryable, 1300, "4", 30000, 4000},
      {O::retryable, 6100, "4", 30000, 6100},
      // ... never sooner than the backoff ("Retry-After: 0" is no loop) ...
      {O::retryable, 900, "0", 30000, 900},
      // ... Retry-After at most max_backoff ...
      {O::retryable, 1300, "3600", 20000, 20000},
      {O::retryable, 1300, "20", 20000, 20000},
      {O::retryable, 1300, "21", 20000, 20000},
      {O::retryable, 1300, "19", 20000, 19000},
      {O::retryable, 1300, "1000001", 25000, 25000},
      {O::retryable, 1300, "18446744073709551615", 25000, 25000},
      // ... an HTTP date or garbage is the backoff alone.
      {O::retryable, 1400, "Wed, 21 Oct 2015 07:28:00 GMT", 30000, 1400},
      {O::retryable, 1400, "soon", 30000, 1400},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(otlp_retry_delay(row.outcome, milliseconds(row.backoff_ms), row.retry_after,
                               milliseconds(row.max_ms)),
              milliseconds(row.delay_ms))
        << otlp_export_outcome_label(row.outcome) << " backoff " << row.backoff_ms
        << " Retry-After '" << row.retry_after << "' max " << row.max_ms;
  }
}

}  // namespace
}  // namespace rdma_exporter
