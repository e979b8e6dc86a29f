#include "collectors/scrape.hpp"

namespace rdma_exporter {

bool is_protocol_absent(const Error& e) {
  return e.code == EPROTONOSUPPORT || e.code == EAFNOSUPPORT;
}

const Result<Topology>& Scrape::topology() {
  if (topology_) return *topology_;
  auto devices = netlink_.devices();
  if (!devices) {
    topology_.emplace(devices.error());
    return *topology_;
  }
  Topology t;
  for (auto& d : *devices) {
    if (!filter_.allows(d.name)) continue;
    auto ports = netlink_.ports(d.index);
    t.devices.push_back(TopologyDevice{std::move(d), std::move(ports)});
  }
  topology_.emplace(std::move(t));
  return *topology_;
}

const Topology* Scrape::topology_for(std::vector<std::string>& errors) {
  const auto& t = topology();
  if (t) return &t.value();
  if (!is_protocol_absent(t.error())) errors.push_back("list devices: " + t.error().message);
  return nullptr;
}

bool Scrape::netlink_absent() {
  const auto& t = topology();
  return !t && is_protocol_absent(t.error());
}

}  // namespace rdma_exporter
