#include "common/metric_sink.hpp"

#include <cctype>

namespace rdma_exporter {
namespace {

prometheus::ClientMetric make_metric(Labels&& labels) {
  prometheus::ClientMetric m;
  m.label.reserve(labels.size());
  for (auto& label : labels) {
    m.label.push_back(
        prometheus::ClientMetric::Label{std::move(label.first), std::move(label.second)});
  }
  return m;
}

}  // namespace

prometheus::MetricFamily* MetricSink::find_or_add(std::string_view name, std::string_view help,
                                                  prometheus::MetricType type) {
  std::size_t at = 0;
  if (last_ < families_.size() && families_[last_].name == name) {
    at = last_;
  } else if (auto it = index_.find(name); it != index_.end()) {
    at = it->second;
  } else {
    at = families_.size();
  }
  if (at < families_.size()) {
    auto& fam = families_[at];
    if (fam.type != type) {
      ++rejected_;
      return nullptr;
    }
    last_ = at;
    return &fam;
  }
  index_.emplace(std::string(name), families_.size());
  last_ = families_.size();
  families_.push_back(prometheus::MetricFamily{std::string(name), std::string(help), type, {}});
  tags_.emplace_back();
  return &families_.back();
}

void MetricSink::add(prometheus::MetricFamily* family, prometheus::ClientMetric metric) {
  tags_[static_cast<std::size_t>(family - families_.data())].push_back(tag_);
  family->metric.push_back(std::move(metric));
}

void MetricSink::counter(std::string_view name, std::string_view help, Labels labels,
                         double value) {
  if (auto* fam = find_or_add(name, help, prometheus::MetricType::Counter)) {
    auto m = make_metric(std::move(labels));
    m.counter.value = value;
    add(fam, std::move(m));
  }
}

void MetricSink::gauge(std::string_view name, std::string_view help, Labels labels, double value) {
  if (auto* fam = find_or_add(name, help, prometheus::MetricType::Gauge)) {
    auto m = make_metric(std::move(labels));
    m.gauge.value = value;
    add(fam, std::move(m));
  }
}

void MetricSink::histogram(std::string_view name, std::string_view help, const Labels& labels,
                           prometheus::ClientMetric metric) {
  if (auto* fam = find_or_add(name, help, prometheus::MetricType::Histogram)) {
    for (const auto& [k, v] : labels) metric.label.push_back(prometheus::ClientMetric::Label{k, v});
    add(fam, std::move(metric));
  }
}

void MetricSink::family(prometheus::MetricFamily family) {
  if (auto* fam = find_or_add(family.name, family.help, family.type)) {
    for (auto& m : family.metric) add(fam, std::move(m));
  }
}

std::vector<prometheus::MetricFamily> MetricSink::take() {
  index_.clear();
  last_ = 0;
  tags_.clear();
  return std::move(families_);
}

std::string sanitize_metric_fragment(std::string_view raw) {
  std::string out;
  out.reserve(raw.size() + 1);
  if (!raw.empty() && std::isdigit(static_cast<unsigned char>(raw.front()))) out.push_back('_');
  for (char c : raw) {
    const auto u = static_cast<unsigned char>(c);
    out.push_back(std::isalnum(u) != 0 || c == '_' ? c : '_');
  }
  return out;
}

}  // namespace rdma_exporter
