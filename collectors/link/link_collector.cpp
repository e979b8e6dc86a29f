#include "collectors/link/link_collector.hpp"

#include <map>
#include <set>

#include "collectors/registry.hpp"

namespace rdma_exporter {
namespace {

void add_fec_counter(MetricSink& sink, const Labels& labels, const std::string& what,
                     const char* help, const std::optional<ethnl::FecCounter>& c) {
  if (!c) return;
  sink.counter("rdma_netdev_fec_" + what + "_total", help, labels, static_cast<double>(c->total));
  for (std::size_t lane = 0; lane < c->lanes.size(); ++lane) {
    Labels with_lane = labels;
    with_lane.emplace_back("lane", std::to_string(lane));
    sink.counter("rdma_netdev_fec_lane_" + what + "_total",
                 std::string(help) + " Per lane, where the driver counts per lane.",
                 std::move(with_lane), static_cast<double>(c->lanes[lane]));
  }
}

// rdma_netdev_carrier and its up and down counts (/sys/class/net).
void add_carrier(MetricSink& sink, const Labels& labels, const sysfs::Carrier& c) {
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
                 labels, static_cast<double>(*c.down_changes));
  }
}

// Why the link is down and how often it went down (ethtool netlink).
void add_link_state(MetricSink& sink, const Labels& labels, const ethnl::LinkState& s) {
  if (s.ext_state) {
    Labels info = labels;
    info.emplace_back("ext_state", ethnl::ext_state_name(*s.ext_state));
    info.emplace_back("ext_substate", s.ext_substate
                                          ? ethnl::ext_substate_name(*s.ext_state, *s.ext_substate)
                                          : "");
    sink.info("rdma_netdev_link_ext_state_info",
              "Why the link of the network device behind the RDMA port is down, as its "
              "driver says (ethtool netlink's extended link state and substate, as the "
              "kernel's uapi names them); the value is always 1.",
              std::move(info));
  }
  if (s.down_events) {
    sink.counter("rdma_netdev_link_down_events_total",
                 "Times the link of the network device behind the RDMA port went down, as "
                 "its driver counts them (ethtool netlink, Linux 6.4 and later).",
                 labels, static_cast<double>(*s.down_events));
  }
}

// The FEC mode and its counters, in total and per lane (ethtool netlink).
void add_fec(MetricSink& sink, const Labels& labels, const ethnl::Fec& f) {
  if (f.active) {
    Labels info = labels;
    info.emplace_back("mode", ethnl::fec_mode_name(*f.active));
    sink.info("rdma_netdev_fec_mode_info",
              "The forward error correction mode the link of the network device behind the "
              "RDMA port uses (off, rs, baser, llrs); the value is always 1.",
              std::move(info));
  }
  add_fec_counter(sink, labels, "corrected_blocks",
                  "FEC blocks the receiver corrected on the link of the network device "
                  "behind the RDMA port.",
                  f.corrected_blocks);
  add_fec_counter(sink, labels, "uncorrectable_blocks",
                  "FEC blocks the receiver could not correct (the frames in them were "
                  "lost) on the link of the network device behind the RDMA port.",
                  f.uncorrectable_blocks);
  add_fec_counter(sink, labels, "corrected_bits",
                  "Bits the FEC decoder corrected on the link of the network device behind "
                  "the RDMA port.",
                  f.corrected_bits);
}

}  // namespace

LinkCollector::Read LinkCollector::read(const std::string& netdev,
                                        std::vector<std::string>& errors) {
  Read r;
  sysfs::ReadNotes notes;
  r.carrier = net_.read_carrier(netdev, notes);
  for (auto& problem : notes.problems) errors.push_back(netdev + ": " + problem);
  if (!ethnl_) return r;
  if (auto s = ethnl_->linkstate(netdev)) {
    r.state = std::move(s).value();
  } else if (!ethnl::not_available(s.error())) {
    errors.push_back(netdev + ": " + s.error().message);
  }
  if (auto f = ethnl_->fec(netdev)) {
    r.fec = std::move(f).value();
  } else if (!ethnl::not_available(f.error())) {
    errors.push_back(netdev + ": " + f.error().message);
  }
  return r;
}

std::vector<std::string> LinkCollector::collect(Scrape& scrape, MetricSink& sink) {
  std::vector<std::string> errors;
  const Topology* topology = scrape.topology_for(errors);
  if (topology == nullptr) return errors;
  // Each netdev is read once, however many ports it is behind.
  std::map<std::string, Read> read_by_netdev;
  std::set<std::string> present;
  for_each_port(*topology, [&](const PortRef& p) {
    const std::string* netdev = p.netdev();
    if (netdev == nullptr) return;  // InfiniBand
    present.insert(*netdev);
    auto it = read_by_netdev.find(*netdev);
    if (it == read_by_netdev.end())
      it = read_by_netdev.emplace(*netdev, read(*netdev, errors)).first;
    const Read& r = it->second;
    Labels labels = p.labels();
    labels.emplace_back("netdev", *netdev);
    if (r.carrier) add_carrier(sink, labels, *r.carrier);
    if (r.state) add_link_state(sink, labels, *r.state);
    if (r.fec) add_fec(sink, labels, *r.fec);
  });
  net_.keep_only(present);
  if (ethnl_ && ethnl_->available()) {
    sink.gauge("rdma_exporter_ethtool_netlink_available",
               "1 when the kernel has ethtool netlink (Linux 5.6 and later), which gives the link "
               "collector the link-down reason and count and the FEC series; 0 when it has not.",
               {}, *ethnl_->available() ? 1 : 0);
  }
  return errors;
}

CollectorEntry link_entry() {
  CollectorEntry e;
  e.name = "link";
  e.help =
      "Carrier and link flaps (sysfs), the driver's reason for a down link and link-down count, "
      "and the FEC mode and corrected and uncorrectable blocks (ethtool netlink) of the netdev "
      "behind each RoCE port.";
  e.make = [](const CollectorContext& c) {
    return std::make_unique<LinkCollector>(c.sysfs_root, c.kernel.generic.get());
  };
  return e;
}

}  // namespace rdma_exporter
