#include "collectors/link/link_collector.hpp"

#include <map>
#include <set>

#include "collectors/registry.hpp"

namespace rdma_exporter {

std::vector<std::string> LinkCollector::collect(Scrape& scrape, MetricSink& sink) {
  std::vector<std::string> errors;
  const Topology* topology = scrape.topology_for(errors);
  if (topology == nullptr) return errors;
  // Each netdev is read once, however many ports it is behind.
  std::map<std::string, std::optional<sysfs::Carrier>> read;
  std::set<std::string> present;
  for_each_port(*topology, [&](const PortRef& p) {
    const std::string* netdev = p.netdev();
    if (netdev == nullptr) return;  // InfiniBand
    present.insert(*netdev);
    auto it = read.find(*netdev);
    if (it == read.end()) {
      sysfs::ReadNotes notes;
      it = read.emplace(*netdev, net_.read_carrier(*netdev, notes)).first;
      for (auto& problem : notes.problems) errors.push_back(*netdev + ": " + problem);
    }
    if (!it->second) return;  // gone, or in another network namespace
    const sysfs::Carrier& c = *it->second;
    Labels labels = p.labels();
    labels.emplace_back("netdev", *netdev);
    if (c.up) {
      sink.gauge("rdma_netdev_carrier",
                 "Whether the network device behind the RDMA port has a carrier: 1 up, 0 down "
                 "(absent while the device is administratively down).",
                 labels, *c.up ? 1 : 0);
    }
    if (c.up_changes) {
      sink.counter("rdma_netdev_carrier_up_changes_total",
                   "Times the carrier of the network device behind the RDMA port came up "
                   "(carrier_up_count).",
                   labels, static_cast<double>(*c.up_changes));
    }
    if (c.down_changes) {
      sink.counter("rdma_netdev_carrier_down_changes_total",
                   "Times the carrier of the network device behind the RDMA port went down "
                   "(carrier_down_count): link flaps, counted even between two scrapes.",
                   std::move(labels), static_cast<double>(*c.down_changes));
    }
  });
  net_.keep_only(present);
  return errors;
}

CollectorEntry link_entry() {
  CollectorEntry e;
  e.name = "link";
  e.help =
      "Carrier state and carrier up and down counts (link flaps) of the netdev behind each RoCE "
      "port, from sysfs.";
  e.make = [](const CollectorContext& c) { return std::make_unique<LinkCollector>(c.sysfs_root); };
  return e;
}

}  // namespace rdma_exporter
