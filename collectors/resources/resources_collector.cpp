#include "collectors/resources/resources_collector.hpp"

#include "collectors/registry.hpp"

namespace rdma_exporter {

std::vector<std::string> ResourcesCollector::collect(Scrape& scrape, MetricSink& sink) {
  if (scrape.netlink_absent()) return {};
  auto summaries = scrape.netlink().resource_summaries();
  if (!summaries) return {"resource summary: " + summaries.error().message};
  for (const auto& s : *summaries) {
    if (!scrape.filter().allows(s.dev_name)) continue;
    for (const auto& [resource, count] : s.entries) {
      sink.gauge("rdma_device_resources",
                 "Current number of RDMA objects of a kind (qp, cq, mr, pd, cm_id, ctx, srq) on "
                 "the device.",
                 {{"device", s.dev_name}, {"resource", resource}}, static_cast<double>(count));
    }
  }
  return {};
}

CollectorEntry resources_entry() {
  CollectorEntry e;
  e.name = "resources";
  e.help = "Resource counts per device (QPs, CQs, MRs, PDs, ...), from rdma netlink.";
  e.make = [](const CollectorContext&) { return std::make_unique<ResourcesCollector>(); };
  return e;
}

}  // namespace rdma_exporter
