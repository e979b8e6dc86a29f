#include "exporter/formats/output_formats.hpp"

#include <array>

#include "exporter/formats/json.hpp"
#include "exporter/formats/openmetrics.hpp"
#include "exporter/formats/otlp_json.hpp"
#include "exporter/formats/text.hpp"

namespace rdma_exporter {
namespace {

// The snapshot's text is rendered once per collection and shared by every
// scrape; --once prints the same bytes.
std::string prometheus_text(const RenderInput& in) {
  return in.snapshot.text;
}

std::string openmetrics(const RenderInput& in) {
  return render_openmetrics(in.snapshot.families);
}

std::string json(const RenderInput& in) {
  return render_json(in.snapshot.families, in.snapshot.outcomes, in.now_seconds);
}

std::string otlp_json(const RenderInput& in) {
  return encode_otlp_json(in.snapshot.families, in.otlp);
}

constexpr std::array<OutputFormat, 4> kFormats{{
    {"prometheus", kTextContentType, prometheus_text},
    {"openmetrics", "application/openmetrics-text; version=1.0.0; charset=utf-8", openmetrics},
    {"json", "application/json", json},
    {"otlp-json", "application/json", otlp_json},
}};

}  // namespace

std::span<const OutputFormat> output_formats() {
  return kFormats;
}

const OutputFormat* find_output_format(std::string_view name) {
  for (const OutputFormat& f : kFormats) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string output_format_list(bool mark_default) {
  std::string out;
  for (std::size_t i = 0; i < kFormats.size(); ++i) {
    if (i > 0) out += i + 1 == kFormats.size() ? " or " : ", ";
    out += kFormats[i].name;
    if (i == 0 && mark_default) out += " (default)";
  }
  return out;
}

}  // namespace rdma_exporter
