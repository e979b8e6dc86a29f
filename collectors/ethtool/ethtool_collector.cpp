#include "collectors/ethtool/ethtool_collector.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include "collectors/registry.hpp"
#include "common/kernel/netdev/reader.hpp"

namespace rdma_exporter {

EthtoolCollector::EthtoolCollector(ethtool::Ioctl& ioctl, const EthtoolOptions& options)
    : ioctl_(ioctl), mapper_(options.mappings), raw_stats_(options.raw_stats) {
  for (const auto& p : options.raw_stats_include) raw_include_.push_back(Pattern::checked(p));
}

const EthtoolCollector::Layout& EthtoolCollector::layout_for(
    const std::string& netdev, const std::string& driver, const std::vector<std::string>& names) {
  Layout& l = layouts_[netdev];
  if (l.driver == driver && l.names == names && l.targets.size() == names.size()) return l;
  l.driver = driver;
  l.names = names;
  l.targets = mapper_.resolve(l.driver, l.names);
  l.raw.assign(l.names.size(), raw_stats_);
  if (raw_stats_ && !raw_include_.empty()) {
    for (std::size_t i = 0; i < l.names.size(); ++i) {
      l.raw[i] = std::any_of(raw_include_.begin(), raw_include_.end(),
                             [&](const Pattern& p) { return p.matches(l.names[i]); });
    }
  }
  return l;
}

std::vector<std::string> EthtoolCollector::collect(Scrape& scrape, MetricSink& sink) {
  std::vector<std::string> errors;
  const Topology* topology = scrape.topology_for(errors);
  if (topology == nullptr) return errors;
  // Each netdev is read once, however many ports it is behind.
  std::map<std::string, std::optional<ethtool::DriverStats>> read;
  std::set<std::string> present;
  for_each_port(*topology, [&](const PortRef& p) {
    const std::string* netdev_name = p.netdev();
    if (netdev_name == nullptr) return;  // InfiniBand
    const std::string& netdev = *netdev_name;
    present.insert(netdev);
    auto it = read.find(netdev);
    if (it == read.end()) {
      auto stats = ethtool::read_driver_stats(ioctl_, netdev);
      if (!stats && stats.error().code != ENODEV) {
        errors.push_back(netdev + " (" + p.name() + "): " + stats.error().message);
      }
      // ENODEV: the netdev went away, or lives in another network namespace.
      it = read.emplace(netdev, stats ? std::optional(std::move(stats).value()) : std::nullopt)
               .first;
    }
    if (!it->second) return;
    const ethtool::DriverStats& stats = *it->second;
    const Layout& layout = layout_for(netdev, stats.driver, stats.names);

    Labels base = p.labels();
    base.emplace_back("netdev", netdev);
    // The first statistic that lands on a series wins; a series added twice
    // would make the exposition invalid.
    std::set<std::pair<std::string, Labels>> seen;
    for (std::size_t i = 0; i < layout.targets.size(); ++i) {
      const ethtool::Target& t = layout.targets[i];
      if (t.family == nullptr) continue;
      Labels labels = base;
      if (!t.priority.empty()) labels.emplace_back("priority", t.priority);
      if (!t.direction.empty()) labels.emplace_back("direction", t.direction);
      if (!t.reason.empty()) labels.emplace_back("reason", t.reason);
      if (!seen.emplace(t.family->metric, labels).second) continue;
      sink.counter(t.family->metric, t.family->help, std::move(labels),
                   static_cast<double>(stats.values[i]) * t.scale);
    }
    for (std::size_t i = 0; i < layout.raw.size(); ++i) {
      if (!layout.raw[i]) continue;
      Labels labels = base;
      labels.emplace_back("name", layout.names[i]);
      if (!seen.emplace("rdma_netdev_ethtool_stat", labels).second) continue;
      sink.gauge("rdma_netdev_ethtool_stat",
                 "A driver statistic as ethtool -S shows it, unmapped (its meaning and unit "
                 "are the driver's).",
                 std::move(labels), static_cast<double>(stats.values[i]));
    }
  });
  for (auto it = layouts_.begin(); it != layouts_.end();) {
    it = present.count(it->first) != 0U ? std::next(it) : layouts_.erase(it);
  }
  return errors;
}

CollectorEntry ethtool_entry() {
  CollectorEntry e;
  e.name = "ethtool";
  e.help =
      "PFC pauses, per-priority traffic and discards, ECN marks and NIC drops of the netdev "
      "behind each RoCE port, from the driver's ethtool statistics.";
  set_options<EthtoolOptions>(e, parse_ethtool_options);
  e.make = [](const CollectorContext& c) {
    return std::make_unique<EthtoolCollector>(*c.kernel.ethtool,
                                              std::any_cast<const EthtoolOptions&>(c.options));
  };
  return e;
}

}  // namespace rdma_exporter
