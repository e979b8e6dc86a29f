#include "collectors/registry.hpp"

#include <stdexcept>

namespace rdma_exporter {

// Each collector's folder defines its entry.
CollectorEntry devices_entry();
CollectorEntry hw_counters_entry();
CollectorEntry optional_counters_entry();
CollectorEntry resources_entry();
CollectorEntry qp_counters_entry();
CollectorEntry ethtool_entry();
CollectorEntry dcb_entry();
CollectorEntry sysfs_entry();
CollectorEntry pcie_entry();
CollectorEntry link_entry();
CollectorEntry transceiver_entry();
CollectorEntry pods_entry();

const std::vector<CollectorEntry>& collector_registry() {
  static const std::vector<CollectorEntry> registry = {
      devices_entry(),            // collectors/devices
      hw_counters_entry(),        // collectors/hw_counters
      optional_counters_entry(),  // collectors/optional_counters
      resources_entry(),          // collectors/resources
      qp_counters_entry(),        // collectors/qp_counters
      ethtool_entry(),            // collectors/ethtool
      dcb_entry(),                // collectors/dcb
      sysfs_entry(),              // collectors/sysfs
      pcie_entry(),               // collectors/pcie
      link_entry(),               // collectors/link
      transceiver_entry(),        // collectors/transceiver
      pods_entry(),               // collectors/pods
  };
  return registry;
}

const CollectorEntry* find_collector(std::string_view name) {
  for (const auto& e : collector_registry()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

CollectorSettings::CollectorSettings() {
  for (const auto& e : collector_registry()) {
    settings_.emplace(e.name, Setting{e.enabled_by_default,
                                      e.default_options ? e.default_options() : std::any()});
  }
}

CollectorSettings::Setting& CollectorSettings::setting(std::string_view name) {
  auto it = settings_.find(name);
  if (it == settings_.end()) throw std::out_of_range("no collector " + std::string(name));
  return it->second;
}

const CollectorSettings::Setting& CollectorSettings::setting(std::string_view name) const {
  auto it = settings_.find(name);
  if (it == settings_.end()) throw std::out_of_range("no collector " + std::string(name));
  return it->second;
}

}  // namespace rdma_exporter
