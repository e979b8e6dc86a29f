#pragma once

#include <optional>
#include <vector>

#include "common/kernel/netlink/transport.hpp"
#include "common/kernel/nldev/model.hpp"
#include "common/result.hpp"

namespace rdma_exporter::nldev {

using netlink::Bytes;
using netlink::Reply;

// The nldev queries the collectors need: build the request, exchange it, and
// decode the reply. A dump that raced a change is retried a few times.
class Client {
 public:
  explicit Client(netlink::Transport& transport) : transport_(transport) {}

  Result<std::vector<Device>> devices();
  Result<std::vector<Port>> ports(uint32_t dev_index);
  Result<PortCounters> port_counters(uint32_t dev_index, uint32_t port);
  Result<std::vector<ResourceSummary>> resource_summaries();

  // Per-QP counter sets and the QP resource tracker.
  Result<CounterMode> counter_mode(uint32_t dev_index, uint32_t port);
  Result<std::vector<CounterSet>> counter_sets(uint32_t dev_index);
  Result<std::vector<Qp>> qps(uint32_t dev_index);
  // Writes; they need CAP_NET_ADMIN.
  Status set_auto_mode(uint32_t dev_index, uint32_t port, uint32_t mask);
  Result<BindResult> bind_qp(uint32_t dev_index, uint32_t port, uint32_t lqpn,
                             std::optional<uint32_t> counter_id = std::nullopt);
  Status unbind_qp(uint32_t dev_index, uint32_t port, uint32_t counter_id, uint32_t lqpn);

  // Optional (dynamic) port counters: what the port offers and has enabled,
  // and the whole set to keep enabled (a write: CAP_NET_ADMIN).
  Result<PortCounterStatus> counter_status(uint32_t dev_index, uint32_t port);
  Status set_optional_counters(uint32_t dev_index, uint32_t port,
                               const std::vector<uint32_t>& indices);

 private:
  template <typename T>
  Result<T> query(const Bytes& request, Result<T> (*decode)(const Reply&));

  netlink::Transport& transport_;
};

}  // namespace rdma_exporter::nldev
