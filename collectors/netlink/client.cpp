#include "collectors/netlink/client.hpp"

#include "collectors/netlink/codec.hpp"

namespace rdma_exporter::nldev {
namespace {
constexpr int kAttempts = 3;
}

template <typename T>
Result<T> Client::query(const Bytes& request, Result<T> (*decode)(const Reply&)) {
  for (int attempt = 1;; ++attempt) {
    auto reply = transport_.exchange(request);
    if (!reply) return reply.error();
    auto decoded = decode(*reply);
    if (decoded || decoded.error().code != kDumpInterrupted || attempt == kAttempts) return decoded;
  }
}

Result<std::vector<Device>> Client::devices() {
  return query(build_device_dump(), decode_devices);
}

Result<std::vector<Port>> Client::ports(uint32_t dev_index) {
  return query(build_port_dump(dev_index), decode_ports);
}

Result<PortCounters> Client::port_counters(uint32_t dev_index, uint32_t port) {
  return query(build_port_counters_get(dev_index, port), decode_port_counters);
}

Result<std::vector<ResourceSummary>> Client::resource_summaries() {
  return query(build_resource_summary_dump(), decode_resource_summaries);
}

}  // namespace rdma_exporter::nldev
