#pragma once

#include "collectors/collector.hpp"
#include "collectors/optional_counters/manager.hpp"

namespace rdma_exporter {

// Which optional (dynamic) hw counters every port offers and has enabled,
// through rdma netlink (RDMA_NLDEV_CMD_STAT_GET_STATUS, Linux 5.16+):
// rdma_port_optional_stat_enabled{device,port,counter}. The values of the
// enabled ones come with the other port hw counters (hw_counters collector,
// rdma_port_hw_<name>_total). With a manager, also its write counts.
class OptionalCountersCollector final : public Collector {
 public:
  explicit OptionalCountersCollector(const OptionalCountersOptions& options) : manager_(options) {}

  std::string_view name() const override { return "optional_counters"; }
  std::vector<std::string> collect(Scrape& scrape, MetricSink& sink) override;
  // The manager keeps its write counts across reloads.
  bool reconfigure(const std::any& options) override {
    manager_.reconfigure(std::any_cast<const OptionalCountersOptions&>(options));
    return true;
  }
  KernelStateManager* manager() override { return &manager_; }

 private:
  OptionalCounterManager manager_;
};

}  // namespace rdma_exporter
