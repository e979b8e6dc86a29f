#pragma once

// Builds kernel-shaped netlink messages with libmnl, for tests and the fake
// kernel: the same bytes the kernel's nldev code puts on the wire.

#include <libmnl/libmnl.h>
#include <linux/netlink.h>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "common/kernel/netlink/transport.hpp"

namespace rdma_exporter::testing {

using Bytes = std::vector<uint8_t>;

class NlMessage {
 public:
  explicit NlMessage(uint16_t type, uint16_t flags = 0, uint32_t seq = 0);

  // A family header (struct dcbmsg, ...) between nlmsghdr and the
  // attributes; call before adding any attribute.
  NlMessage& family_header(const void* data, std::size_t len);
  NlMessage& u8(uint16_t attr, uint8_t v);
  NlMessage& u32(uint16_t attr, uint32_t v);
  NlMessage& u64(uint16_t attr, uint64_t v);
  NlMessage& str(uint16_t attr, const std::string& v);
  NlMessage& raw(uint16_t attr, const void* data, std::size_t len);
  NlMessage& begin_nest(uint16_t attr);
  NlMessage& end_nest();

  nlmsghdr* header() { return nlh_; }
  Bytes bytes() const;

 private:
  Bytes buf_;
  nlmsghdr* nlh_;
  std::vector<nlattr*> nests_;
};

// The nldev message type of a command.
uint16_t nldev_type(uint16_t cmd);

Bytes done_message(int error = 0, uint32_t seq = 0);
Bytes ack_message(uint32_t seq = 0);
// An NLMSG_ERROR as the kernel sends it with NETLINK_CAP_ACK and
// NETLINK_EXT_ACK: capped original header, optional extended ack text.
Bytes error_message(int error, const std::string& extack = "", uint32_t seq = 0,
                    const Bytes& original_request = {}, bool capped = true);

// A request's failure as the kernel answers it: one datagram, the
// NLMSG_ERROR of error_message() with errno `err` (and extended ack text).
netlink::Reply failure_reply(int err, std::span<const uint8_t> request,
                             const std::string& extack = "");

// The top-level attributes of a message, in order.
std::vector<const nlattr*> attributes(const nlmsghdr* nlh);

// Several messages in one datagram, as the kernel packs dump parts.
Bytes datagram(std::initializer_list<Bytes> messages);
Bytes datagram(const std::vector<Bytes>& messages);

}  // namespace rdma_exporter::testing
