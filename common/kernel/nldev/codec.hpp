#pragma once

// Pure codecs for rdma netlink (nldev): request builders and reply parsers.
// No I/O: tests feed these functions bytes.

#include <linux/netlink.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/kernel/netlink/messages.hpp"
#include "common/kernel/netlink/transport.hpp"
#include "common/kernel/nldev/model.hpp"
#include "common/result.hpp"

namespace rdma_exporter::nldev {

using netlink::Bytes;
using netlink::Reply;

// The nlmsg_type of an nldev command.
uint16_t message_type(uint16_t cmd);
// "RDMA_NLDEV_CMD_STAT_GET" and friends, for messages.
std::string command_name(uint16_t cmd);

// --- requests -------------------------------------------------------------
Bytes build_device_dump();                                         // RDMA_NLDEV_CMD_GET
Bytes build_port_dump(uint32_t dev_index);                         // RDMA_NLDEV_CMD_PORT_GET
Bytes build_port_counters_get(uint32_t dev_index, uint32_t port);  // RDMA_NLDEV_CMD_STAT_GET
Bytes build_resource_summary_dump();                               // RDMA_NLDEV_CMD_RES_GET

// --- replies --------------------------------------------------------------

// Walks every message of a reply (netlink::walk_messages). Calls on_message
// for each message of type message_type(cmd). Fails on: a kernel error (with its extended ack
// text), a dump interrupted by a change (code netlink::kDumpInterrupted), a truncated message, an
// unexpected message type, or a reply that never reached its end (NLMSG_DONE for dumps, the ACK for
// requests). `reply_cmd` names the messages' command when the kernel answers with another one than
// was asked (RDMA_NLDEV_CMD_STAT_DEL is answered with RDMA_NLDEV_CMD_STAT_SET).
Status walk_reply(const Reply& reply, uint16_t cmd,
                  const std::function<Status(const nlmsghdr&)>& on_message,
                  std::optional<uint16_t> reply_cmd = std::nullopt);

Result<Device> parse_device(const nlmsghdr& msg);
Result<Port> parse_port(const nlmsghdr& msg);
Result<PortCounters> parse_port_counters(const nlmsghdr& msg);
Result<ResourceSummary> parse_resource_summary(const nlmsghdr& msg);

// Whole replies -> models.
Result<std::vector<Device>> decode_devices(const Reply& reply);
Result<std::vector<Port>> decode_ports(const Reply& reply);
Result<PortCounters> decode_port_counters(const Reply& reply);
Result<std::vector<ResourceSummary>> decode_resource_summaries(const Reply& reply);

}  // namespace rdma_exporter::nldev
