#pragma once

#include <memory>

#include "collectors/collector.hpp"
#include "collectors/probe/service.hpp"

namespace rdma_exporter {

// The latency probe, which runs on its own thread, seen by the collection as
// one more collector: its metrics, and its health in
// rdma_exporter_collector_success{collector="probe"} and the duration.
class ProbeCollector final : public Collector {
 public:
  explicit ProbeCollector(std::shared_ptr<probe::ProbeService> service)
      : service_(std::move(service)) {}

  std::string_view name() const override { return "probe"; }
  std::vector<std::string> collect(Scrape& /*scrape*/, MetricSink& sink) override {
    service_->add_metrics(sink);
    return {};
  }

 private:
  std::shared_ptr<probe::ProbeService> service_;
};

}  // namespace rdma_exporter
