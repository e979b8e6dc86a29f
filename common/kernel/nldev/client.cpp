#include "common/kernel/nldev/client.hpp"

#include "common/kernel/nldev/codec.hpp"
#include "common/kernel/nldev/counter_codec.hpp"
#include "common/kernel/nldev/optional_counter_codec.hpp"

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
    if (decoded || decoded.error().code != netlink::kDumpInterrupted || attempt == kAttempts)
      return decoded;
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

Result<CounterMode> Client::counter_mode(uint32_t dev_index, uint32_t port) {
  return query(build_counter_mode_get(dev_index, port), decode_counter_mode);
}

Result<std::vector<CounterSet>> Client::counter_sets(uint32_t dev_index) {
  return query(build_counter_sets_dump(dev_index), decode_counter_sets);
}

Result<std::vector<Qp>> Client::qps(uint32_t dev_index) {
  return query(build_qp_dump(dev_index), decode_qps);
}

Status Client::set_auto_mode(uint32_t dev_index, uint32_t port, uint32_t mask) {
  auto reply = transport_.exchange(build_set_auto_mode(dev_index, port, mask));
  if (!reply) return reply.error();
  return decode_set_auto_mode(*reply);
}

Result<BindResult> Client::bind_qp(uint32_t dev_index, uint32_t port, uint32_t lqpn,
                                   std::optional<uint32_t> counter_id) {
  auto reply = transport_.exchange(build_bind_qp(dev_index, port, lqpn, counter_id));
  if (!reply) return reply.error();
  return decode_bind_qp(*reply);
}

Status Client::unbind_qp(uint32_t dev_index, uint32_t port, uint32_t counter_id, uint32_t lqpn) {
  auto reply = transport_.exchange(build_unbind_qp(dev_index, port, counter_id, lqpn));
  if (!reply) return reply.error();
  return decode_unbind_qp(*reply);
}

Result<PortCounterStatus> Client::counter_status(uint32_t dev_index, uint32_t port) {
  return query(build_counter_status_get(dev_index, port), decode_counter_status);
}

Status Client::set_optional_counters(uint32_t dev_index, uint32_t port,
                                     const std::vector<uint32_t>& indices) {
  auto reply = transport_.exchange(build_set_optional_counters(dev_index, port, indices));
  if (!reply) return reply.error();
  return decode_set_optional_counters(*reply);
}

}  // namespace rdma_exporter::nldev
