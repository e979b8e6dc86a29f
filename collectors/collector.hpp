#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "collectors/scrape.hpp"
#include "common/metric_sink.hpp"

namespace rdma_exporter {

// One source of metrics. collect() adds samples to the sink and returns what
// went wrong; an empty list is success. A failing device or file is reported
// and skipped, never fatal to the rest. collect() does not throw.
class Collector {
 public:
  virtual ~Collector() = default;
  virtual std::string_view name() const = 0;
  virtual std::vector<std::string> collect(Scrape& scrape, MetricSink& sink) = 0;
};

}  // namespace rdma_exporter
