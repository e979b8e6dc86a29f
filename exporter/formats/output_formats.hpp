#pragma once

// The formats a snapshot is written in, in one table: `--once --format`
// and its help read it. A new format is one row and its render function.

#include <span>
#include <string>
#include <string_view>

#include "exporter/formats/otlp_model.hpp"
#include "exporter/snapshot.hpp"

namespace rdma_exporter {

struct RenderInput {
  const Snapshot& snapshot;
  const OtlpEncodeContext& otlp;  // otlp-json: resource and start time
  double now_seconds;             // json: the document's timestamp
};

struct OutputFormat {
  std::string_view name;
  std::string_view content_type;
  std::string (*render)(const RenderInput&);
};

// Every format; the first is the default.
std::span<const OutputFormat> output_formats();
// The format of this name; null when there is none.
const OutputFormat* find_output_format(std::string_view name);
// "prometheus (default), openmetrics, json or otlp-json".
std::string output_format_list(bool mark_default);

}  // namespace rdma_exporter
