#include "common/kernel/netlink/messages.hpp"

#include <libmnl/libmnl.h>

#include <cstring>

#include "common/errno_text.hpp"
#include "common/kernel/netlink/attributes.hpp"

namespace rdma_exporter::netlink {
namespace {

// A whole message starts here within `len` bytes. libmnl's mnl_nlmsg_ok
// compares the message length as an int, so a length of 2^31 or more passes
// it and the walk reads far past the datagram.
bool whole_message(const nlmsghdr* msg, int len) {
  return len >= static_cast<int>(sizeof(nlmsghdr)) && msg->nlmsg_len >= sizeof(nlmsghdr) &&
         msg->nlmsg_len <= static_cast<unsigned>(len);
}

// The errno a kernel error code (negative errno) stands for. A code outside
// the errno range (INT_MIN, a positive number) is not one the kernel sends:
// it becomes EPROTO rather than a negation that overflows.
int errno_of(int code) {
  constexpr int kMaxErrno = 4095;  // MAX_ERRNO in the kernel
  return code < 0 && code >= -kMaxErrno ? -code : EPROTO;
}

}  // namespace

bool ends_exchange(std::span<const uint8_t> datagram) {
  const auto* msg = reinterpret_cast<const nlmsghdr*>(datagram.data());
  auto len = static_cast<int>(datagram.size());
  while (whole_message(msg, len)) {
    if (msg->nlmsg_type == NLMSG_DONE || msg->nlmsg_type == NLMSG_ERROR) return true;
    msg = mnl_nlmsg_next(msg, &len);
  }
  return false;
}

Status walk_messages(const Reply& reply, uint16_t expected_type, const std::string& what,
                     const std::function<Status(const nlmsghdr&)>& on_message) {
  bool ended = false;
  for (const Bytes& dgram : reply.datagrams) {
    const auto* msg = reinterpret_cast<const nlmsghdr*>(dgram.data());
    auto len = static_cast<int>(dgram.size());
    while (!ended && whole_message(msg, len)) {
      if ((msg->nlmsg_flags & NLM_F_DUMP_INTR) != 0) {
        return Error{kDumpInterrupted, what + ": dump interrupted by a concurrent change"};
      }
      const std::size_t payload_len = mnl_nlmsg_get_payload_len(msg);
      switch (msg->nlmsg_type) {
        case NLMSG_NOOP:
          break;
        case NLMSG_OVERRUN:
          return Error{ENOBUFS, what + ": netlink overrun, reply lost"};
        case NLMSG_ERROR: {
          if (payload_len < sizeof(nlmsgerr)) return malformed("truncated NLMSG_ERROR");
          const auto* err = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(msg));
          if (err->error == 0) {
            ended = true;  // the ACK of a request
            break;
          }
          std::size_t tlv = sizeof(nlmsgerr);
          if ((msg->nlmsg_flags & NLM_F_CAPPED) == 0 && err->msg.nlmsg_len >= sizeof(nlmsghdr)) {
            tlv += err->msg.nlmsg_len - sizeof(nlmsghdr);
          }
          return kernel_error(what, errno_of(err->error), extack_message(*msg, tlv));
        }
        case NLMSG_DONE: {
          if (payload_len >= sizeof(int)) {
            int code = 0;
            std::memcpy(&code, mnl_nlmsg_get_payload(msg), sizeof code);
            if (code < 0)
              return kernel_error(what, errno_of(code), extack_message(*msg, sizeof(int)));
          }
          ended = true;
          break;
        }
        default:
          if (msg->nlmsg_type != expected_type) {
            return malformed("unexpected message type " + std::to_string(msg->nlmsg_type) +
                             " in reply to " + what);
          }
          if (Status s = on_message(*msg); !s) return s;
      }
      msg = mnl_nlmsg_next(msg, &len);
    }
    if (!ended && len > 0) {
      return malformed("truncated netlink message (" + std::to_string(len) +
                       " stray bytes in a datagram)");
    }
  }
  if (!ended) return malformed("reply to " + what + " ended before its end marker");
  return ok_status();
}

std::string extack_message(const nlmsghdr& msg, std::size_t tlv_offset) {
  if ((msg.nlmsg_flags & NLM_F_ACK_TLVS) == 0) return {};
  const std::size_t payload_len = mnl_nlmsg_get_payload_len(&msg);
  tlv_offset = MNL_ALIGN(tlv_offset);
  if (tlv_offset >= payload_len) return {};
  const auto* base = static_cast<const uint8_t*>(mnl_nlmsg_get_payload(&msg)) + tlv_offset;
  std::string text;
  (void)for_each_attr(base, payload_len - tlv_offset, "extended ack",
                      [&](const nlattr* a) -> Status {
                        if (mnl_attr_get_type(a) == NLMSGERR_ATTR_MSG &&
                            mnl_attr_validate(a, MNL_TYPE_NUL_STRING) == 0) {
                          text = mnl_attr_get_str(a);
                        }
                        return ok_status();
                      });
  return text;
}

Error kernel_error(const std::string& what, int err, const std::string& extack) {
  std::string text = what + ": " + errno_text(err);
  if (!extack.empty()) text += " (" + extack + ")";
  return Error{err, text};
}

}  // namespace rdma_exporter::netlink
