#pragma once

#include <memory>

#include "collectors/collector.hpp"
#include "exporter/probe/probe.hpp"

namespace rdma_exporter {

// The latency probe, which runs on its own thread, seen by the collection as
// one more collector: its metrics, and its health in
// rdma_exporter_collector_success{collector="probe"} and the duration.
class ProbeCollector final : public Collector {
 public:
  explicit ProbeCollector(std::shared_ptr<probe::ProbeService> service)
      : service_(std::move(service)) {}

  static constexpr std::string_view kName = "probe";

  std::string_view name() const override { return kName; }
  // The probe's own problems (no device, responder not listening, an
  // unreadable file_sd file), not its targets' state, which rdma_probe_up says.
  std::vector<std::string> collect(Scrape& /*scrape*/, MetricSink& sink) override {
    return service_->collect(sink);
  }

 private:
  std::shared_ptr<probe::ProbeService> service_;
};

}  // namespace rdma_exporter
