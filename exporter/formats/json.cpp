#include "exporter/formats/json.hpp"

#include "common/json_writer.hpp"
#include "exporter/formats/prometheus_values.hpp"
#include "exporter/snapshot.hpp"

namespace rdma_exporter {
namespace {

// Numbers as the text exposition writes them: integral values as plain
// digits, "+Inf" and "-Inf".
const JsonWriter::Numbers kPrometheusNumbers{format_number, "NaN", "+Inf", "-Inf"};

void write_outcome(JsonWriter& w, const CollectorOutcome& o) {
  w.begin_object();
  w.key("name");
  w.string(o.name);
  w.key("success");
  w.boolean(o.errors.empty());
  w.key("duration_seconds");
  w.number(o.duration_seconds);
  w.key("errors");
  w.begin_array();
  for (const auto& e : o.errors) w.string(e);
  w.end_array();
  w.end_object();
}

void write_histogram(JsonWriter& w, const prometheus::ClientMetric::Histogram& h) {
  w.key("count");
  w.integer(h.sample_count);
  w.key("sum");
  w.number(h.sample_sum);
  w.key("buckets");
  w.begin_array();
  for (const auto& b : h.bucket) {
    w.begin_object();
    w.key("le");
    w.number(b.upper_bound);
    w.key("count");
    w.integer(b.cumulative_count);
    w.end_object();
  }
  w.end_array();
}

void write_family(JsonWriter& w, const prometheus::MetricFamily& f) {
  w.begin_object();
  w.key("name");
  w.string(f.name);
  w.key("type");
  w.string(metric_type_name(f.type));
  w.key("help");
  w.string(f.help);
  w.key("samples");
  w.begin_array();
  for (const auto& m : f.metric) {
    w.begin_object();
    w.key("labels");
    w.begin_object();
    for (const auto& l : m.label) {
      w.key(l.name);
      w.string(l.value);
    }
    w.end_object();
    if (f.type == prometheus::MetricType::Histogram) {
      write_histogram(w, m.histogram);
    } else {
      w.key("value");
      w.number(sample_value(f, m));
    }
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

}  // namespace

std::string render_json(const std::vector<prometheus::MetricFamily>& families,
                        const std::vector<CollectorOutcome>& outcomes, double timestamp_seconds) {
  JsonWriter w(kPrometheusNumbers);
  w.begin_object();
  w.key("schema");
  w.string("rdma_exporter/v1");
  w.key("timestamp_seconds");
  w.number(timestamp_seconds);
  w.key("collectors");
  w.begin_array();
  for (const auto& o : outcomes) write_outcome(w, o);
  w.end_array();
  w.key("metrics");
  w.begin_array();
  for (const auto& f : families) write_family(w, f);
  w.end_array();
  w.end_object();
  return w.take() + "\n";
}

}  // namespace rdma_exporter
