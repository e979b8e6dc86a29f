#pragma once

#include "collectors/collector.hpp"

namespace rdma_exporter {

// Current number of RDMA objects per device (RDMA_NLDEV_CMD_RES_GET):
// rdma_device_resources{device,resource="qp|cq|mr|pd|cm_id|ctx|srq"}.
class ResourcesCollector final : public Collector {
 public:
  std::string_view name() const override { return "resources"; }
  std::vector<std::string> collect(Scrape& scrape, MetricSink& sink) override;
};

}  // namespace rdma_exporter
