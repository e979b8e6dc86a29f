#pragma once

// Walking the messages of a netlink reply, for any netlink family: the end
// of an exchange (NLMSG_DONE or the ACK), kernel errors with their extended
// ack text, interrupted dumps and truncated datagrams. No I/O.

#include <linux/netlink.h>

#include <cerrno>
#include <functional>
#include <span>
#include <string>

#include "common/kernel/netlink/transport.hpp"
#include "common/result.hpp"

namespace rdma_exporter::netlink {

// Error code used when a dump raced a change (NLM_F_DUMP_INTR): retry it.
inline constexpr int kDumpInterrupted = EAGAIN;

// True when this datagram holds the message that ends an exchange
// (NLMSG_DONE, or NLMSG_ERROR which also carries ACKs).
bool ends_exchange(std::span<const uint8_t> datagram);

// Walks every message of a reply: on_message for each message of
// `expected_type`. Fails on a kernel error (with its extended ack text), a
// dump interrupted by a change (code kDumpInterrupted), a truncated message,
// an unexpected message type, or a reply that never reached its end
// (NLMSG_DONE for dumps, the ACK for requests). Errors name `what`.
Status walk_messages(const Reply& reply, uint16_t expected_type, const std::string& what,
                     const std::function<Status(const nlmsghdr&)>& on_message);

// The text of an extended ack (NLMSGERR_ATTR_MSG), if the kernel sent one;
// its attributes start `tlv_offset` bytes into the payload.
std::string extack_message(const nlmsghdr& msg, std::size_t tlv_offset);

// `what` names the request ("RDMA_NLDEV_CMD_STAT_GET", "RTM_GETDCB ...").
Error kernel_error(const std::string& what, int err, const std::string& extack);

}  // namespace rdma_exporter::netlink
