#pragma once

#include <prometheus/metric_family.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rdma_exporter {

using Labels = std::vector<std::pair<std::string, std::string>>;

// Collects samples into prometheus::MetricFamily values. Samples with the same
// metric name land in one family, in the order they were first added. A name
// added again with another type is rejected and counted, so one collector's
// mistake can never produce an invalid exposition.
class MetricSink {
 public:
  void counter(std::string_view name, std::string_view help, Labels labels, double value);
  void gauge(std::string_view name, std::string_view help, Labels labels, double value);
  // An info metric: a gauge of value 1 whose labels carry the information.
  void info(std::string_view name, std::string_view help, Labels labels) {
    gauge(name, help, std::move(labels), 1.0);
  }

  // A histogram sample: `metric` as prometheus::Histogram::Collect() gives it
  // (buckets, sum and count), with `labels` added after its own.
  void histogram(std::string_view name, std::string_view help, const Labels& labels,
                 prometheus::ClientMetric metric);

  // Adds a prepared family; merged by name.
  void family(prometheus::MetricFamily family);

  std::size_t rejected() const { return rejected_; }
  bool empty() const { return families_.empty(); }
  std::vector<prometheus::MetricFamily> take();

  // Marks the samples added from now on with `tag` (0 until set): which part
  // of the program made them, so that a collection can be split afterwards.
  void set_tag(uint16_t tag) { tag_ = tag; }
  // Every sample's tag, parallel to the families take() returns:
  // tags[f][m] for families[f].metric[m]. Taken before take().
  std::vector<std::vector<uint16_t>> take_tags() { return std::move(tags_); }

 private:
  prometheus::MetricFamily* find_or_add(std::string_view name, std::string_view help,
                                        prometheus::MetricType type);

  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  void add(prometheus::MetricFamily* family, prometheus::ClientMetric metric);

  std::vector<prometheus::MetricFamily> families_;
  std::vector<std::vector<uint16_t>> tags_;  // per family, the tag of each sample
  uint16_t tag_ = 0;
  // Looked up by string_view, without a copy of the name per sample.
  std::unordered_map<std::string, std::size_t, NameHash, std::equal_to<>> index_;
  std::size_t last_ = 0;  // the family of the previous sample: most often the next one's too
  std::size_t rejected_ = 0;
};

// Turns a kernel counter name into a valid metric name fragment: every byte
// outside [A-Za-z0-9_] becomes '_', and a leading digit gets a '_' prefix.
std::string sanitize_metric_fragment(std::string_view raw);

}  // namespace rdma_exporter
