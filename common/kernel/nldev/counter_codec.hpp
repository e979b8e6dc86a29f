#pragma once

// Codecs for per-QP counter sets and the QP resource tracker. No I/O.

#include <cstdint>
#include <optional>
#include <vector>

#include "common/kernel/netlink/transport.hpp"
#include "common/kernel/nldev/model.hpp"
#include "common/result.hpp"

namespace rdma_exporter::nldev {

using netlink::Bytes;
using netlink::Reply;

// RDMA_NLDEV_CMD_STAT_GET doit, STAT_RES=RES_QP: the port's counter mode.
Bytes build_counter_mode_get(uint32_t dev_index, uint32_t port);
// RDMA_NLDEV_CMD_STAT_GET dump, STAT_RES=RES_QP: every counter set of a device.
Bytes build_counter_sets_dump(uint32_t dev_index);
// RDMA_NLDEV_CMD_STAT_SET: auto mode with a criteria mask (0 turns auto off).
Bytes build_set_auto_mode(uint32_t dev_index, uint32_t port, uint32_t mask);
// RDMA_NLDEV_CMD_STAT_SET, manual: bind a QP to a counter set (a new one when
// no id is given).
Bytes build_bind_qp(uint32_t dev_index, uint32_t port, uint32_t lqpn,
                    std::optional<uint32_t> counter_id);
// RDMA_NLDEV_CMD_STAT_DEL: unbind a QP from its counter set.
Bytes build_unbind_qp(uint32_t dev_index, uint32_t port, uint32_t counter_id, uint32_t lqpn);
// RDMA_NLDEV_CMD_RES_QP_GET dump: every QP of a device.
Bytes build_qp_dump(uint32_t dev_index);

Result<CounterMode> decode_counter_mode(const Reply& reply);
Result<std::vector<CounterSet>> decode_counter_sets(const Reply& reply);
Status decode_set_auto_mode(const Reply& reply);
Result<BindResult> decode_bind_qp(const Reply& reply);
Status decode_unbind_qp(const Reply& reply);
Result<std::vector<Qp>> decode_qps(const Reply& reply);

// Kernel enum values as iproute2 spells them.
std::string qp_type_name(uint8_t type);    // "RC", "UD", ...
std::string qp_state_name(uint8_t state);  // "RTS", "ERR", ...
// Names of a counter mode and an auto mask, as iproute2 prints them.
std::string counter_mode_name(uint32_t mode);  // "none", "auto", "manual"
std::string auto_mask_name(uint32_t mask);     // "qp_type,pid"
std::optional<uint8_t> qp_type_from_name(const std::string& name);

}  // namespace rdma_exporter::nldev
