#pragma once

#include <prometheus/metric_family.h>

#include <string>
#include <string_view>
#include <vector>

namespace rdma_exporter {

inline constexpr const char* kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

// Prometheus text exposition format 0.0.4.
std::string render_text(const std::vector<prometheus::MetricFamily>& families);

// OpenMetrics 1.0 text: counter families named without `_total`, samples
// with it, `# EOF` at the end.
std::string render_openmetrics(const std::vector<prometheus::MetricFamily>& families);

struct CollectorOutcome;
// The stable JSON document of `--once --format=json` (schema in
// docs/configuration.md): collectors' outcomes and every sample.
std::string render_json(const std::vector<prometheus::MetricFamily>& families,
                        const std::vector<CollectorOutcome>& outcomes, double timestamp_seconds);

// Writes `data` to `path` atomically: a temporary file in the same folder,
// flushed to disk, then renamed over `path`. Readers see the old file or the
// new one, never a part.
bool write_file_atomically(const std::string& path, std::string_view data, std::string& error);

// A gzip member (RFC 1952) holding `data`.
std::string gzip_compress(std::string_view data);

}  // namespace rdma_exporter
