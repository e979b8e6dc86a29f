#include "exporter/formats/openmetrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "exporter/formats/prometheus_values.hpp"

namespace rdma_exporter {
namespace {

std::string escape_label(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string label_text(const prometheus::ClientMetric& m, const std::string& extra_name = "",
                       const std::string& extra_value = "") {
  if (m.label.empty() && extra_name.empty()) return "";
  std::string out = "{";
  for (const auto& l : m.label) {
    if (out.size() > 1) out += ',';
    out += l.name + "=\"" + escape_label(l.value) + "\"";
  }
  if (!extra_name.empty()) {
    if (out.size() > 1) out += ',';
    out += extra_name + "=\"" + extra_value + "\"";
  }
  return out + "}";
}

}  // namespace

std::string render_openmetrics(const std::vector<prometheus::MetricFamily>& families) {
  std::string out;
  for (const auto& f : families) {
    std::string name = f.name;
    const bool counter = f.type == prometheus::MetricType::Counter;
    if (counter && name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0) {
      name.resize(name.size() - 6);
    }
    out += "# TYPE " + name + " " + metric_type_name(f.type) + "\n";
    if (!f.help.empty()) out += "# HELP " + name + " " + escape_label(f.help) + "\n";
    for (const auto& m : f.metric) {
      if (f.type == prometheus::MetricType::Histogram) {
        uint64_t last = 0;
        for (const auto& b : m.histogram.bucket) {
          out += name + "_bucket" + label_text(m, "le", format_number(b.upper_bound)) + " " +
                 std::to_string(b.cumulative_count) + "\n";
          last = b.cumulative_count;
        }
        if (m.histogram.bucket.empty() || !std::isinf(m.histogram.bucket.back().upper_bound)) {
          out += name + "_bucket" + label_text(m, "le", "+Inf") + " " +
                 std::to_string(std::max(last, m.histogram.sample_count)) + "\n";
        }
        out +=
            name + "_count" + label_text(m) + " " + std::to_string(m.histogram.sample_count) + "\n";
        out += name + "_sum" + label_text(m) + " " + format_number(m.histogram.sample_sum) + "\n";
        continue;
      }
      out += name + (counter ? "_total" : "") + label_text(m) + " " +
             format_number(sample_value(f, m)) + "\n";
    }
  }
  out += "# EOF\n";
  return out;
}

}  // namespace rdma_exporter
