#include "exporter/formats/json.hpp"

#include <cmath>

#include "common/text.hpp"
#include "exporter/formats/prometheus_values.hpp"
#include "exporter/snapshot.hpp"

namespace rdma_exporter {

std::string render_json(const std::vector<prometheus::MetricFamily>& families,
                        const std::vector<CollectorOutcome>& outcomes, double timestamp_seconds) {
  std::string out =
      "{\"schema\":\"rdma_exporter/v1\",\"timestamp_seconds\":" + format_number(timestamp_seconds) +
      ",\"collectors\":[";
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const auto& o = outcomes[i];
    if (i > 0) out += ',';
    out += "{\"name\":" + json_quote(o.name) +
           ",\"success\":" + (o.errors.empty() ? "true" : "false") +
           ",\"duration_seconds\":" + format_number(o.duration_seconds) + ",\"errors\":[";
    for (std::size_t e = 0; e < o.errors.size(); ++e) {
      out += (e > 0 ? "," : "") + json_quote(o.errors[e]);
    }
    out += "]}";
  }
  out += "],\"metrics\":[";
  for (std::size_t i = 0; i < families.size(); ++i) {
    const auto& f = families[i];
    if (i > 0) out += ',';
    out += "{\"name\":" + json_quote(f.name) + ",\"type\":\"" + metric_type_name(f.type) +
           "\",\"help\":" + json_quote(f.help) + ",\"samples\":[";
    for (std::size_t j = 0; j < f.metric.size(); ++j) {
      const auto& m = f.metric[j];
      if (j > 0) out += ',';
      out += "{\"labels\":{";
      for (std::size_t l = 0; l < m.label.size(); ++l) {
        out +=
            (l > 0 ? "," : "") + json_quote(m.label[l].name) + ":" + json_quote(m.label[l].value);
      }
      out += "}";
      if (f.type == prometheus::MetricType::Histogram) {
        out += ",\"count\":" + std::to_string(m.histogram.sample_count) +
               ",\"sum\":" + format_number(m.histogram.sample_sum) + ",\"buckets\":[";
        for (std::size_t b = 0; b < m.histogram.bucket.size(); ++b) {
          const auto& bk = m.histogram.bucket[b];
          out += std::string(b > 0 ? "," : "") + "{\"le\":" +
                 (std::isinf(bk.upper_bound) ? std::string("\"+Inf\"")
                                             : format_number(bk.upper_bound)) +
                 ",\"count\":" + std::to_string(bk.cumulative_count) + "}";
        }
        out += "]}";
      } else {
        const double v = sample_value(f, m);
        out +=
            ",\"value\":" + (std::isfinite(v) ? format_number(v) : json_quote(format_number(v))) +
            "}";
      }
    }
    out += "]}";
  }
  return out + "]}\n";
}

}  // namespace rdma_exporter
