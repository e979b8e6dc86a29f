#pragma once

// Codecs for optional (dynamic) port hw counters: which a port offers and has
// enabled (RDMA_NLDEV_CMD_STAT_GET_STATUS, Linux 5.16+), and the whole set to
// keep enabled (RDMA_NLDEV_CMD_STAT_SET with STAT_HWCOUNTERS). No I/O.

#include <cstdint>
#include <vector>

#include "common/kernel/netlink/transport.hpp"
#include "common/kernel/nldev/model.hpp"
#include "common/result.hpp"

namespace rdma_exporter::nldev {

using netlink::Bytes;
using netlink::Reply;

// RDMA_NLDEV_CMD_STAT_GET_STATUS doit: every hw counter of the port with its
// index, and the enabled state of the optional ones.
Bytes build_counter_status_get(uint32_t dev_index, uint32_t port);
// RDMA_NLDEV_CMD_STAT_SET with a STAT_HWCOUNTERS table of
// STAT_HWCOUNTER_INDEX values. The kernel enables exactly these optional
// counters and disables every other one (an empty table disables all).
Bytes build_set_optional_counters(uint32_t dev_index, uint32_t port,
                                  const std::vector<uint32_t>& indices);

// Fails on a malformed answer: a missing table, an entry without name or
// index, or an index listed twice.
Result<PortCounterStatus> decode_counter_status(const Reply& reply);
Status decode_set_optional_counters(const Reply& reply);

}  // namespace rdma_exporter::nldev
