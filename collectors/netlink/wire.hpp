#pragma once

// Attribute and message helpers shared by the nldev codecs. Internal to
// collectors/netlink: validated attribute access that turns every malformed
// input into an Error, never into a crash or a silently short result.

#include <libmnl/libmnl.h>
#include <rdma/rdma_netlink.h>

#include <array>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "collectors/netlink/codec.hpp"

namespace rdma_exporter::nldev::wire {

constexpr std::size_t kMaxAttr = RDMA_NLDEV_ATTR_MAX;
using AttrTable = std::array<const nlattr*, kMaxAttr>;

inline Error malformed(const std::string& what) {
  return Error{EBADMSG, "malformed netlink reply: " + what};
}

// Calls fn for every attribute in [data, data + len). Fails when the bytes do
// not hold whole attributes: a truncated message must never look complete.
template <typename Fn>
Status for_each_attr(const void* data, std::size_t len, const char* where, Fn&& fn) {
  const auto* attr = static_cast<const nlattr*>(data);
  auto remaining = static_cast<int>(len);
  while (mnl_attr_ok(attr, remaining)) {
    if (Status s = fn(attr); !s) return s;
    remaining -= static_cast<int>(MNL_ALIGN(attr->nla_len));
    attr = mnl_attr_next(attr);
  }
  if (remaining > 0) {
    return malformed(std::string("truncated attribute in ") + where + " (" +
                     std::to_string(remaining) + " bytes left)");
  }
  return ok_status();
}

// Indexes the attributes by type; unknown types (newer kernels) are ignored.
inline Result<AttrTable> table_of(const void* data, std::size_t len, const char* where) {
  AttrTable table{};
  Status s = for_each_attr(data, len, where, [&](const nlattr* a) -> Status {
    const uint16_t type = mnl_attr_get_type(a);
    if (type < kMaxAttr) table[type] = a;
    return ok_status();
  });
  if (!s) return s.error();
  return table;
}

inline Result<AttrTable> table_of_message(const nlmsghdr& msg, const char* where) {
  return table_of(mnl_nlmsg_get_payload(&msg), mnl_nlmsg_get_payload_len(&msg), where);
}

inline Result<AttrTable> table_of_nest(const nlattr* nest, const char* where) {
  return table_of(mnl_attr_get_payload(nest), mnl_attr_get_payload_len(nest), where);
}

inline Status check_type(const nlattr* a, mnl_attr_data_type type, const char* name) {
  if (mnl_attr_validate(a, type) < 0) {
    return malformed(std::string("attribute ") + name + " has a bad length (" +
                     std::to_string(mnl_attr_get_payload_len(a)) + " bytes)");
  }
  return ok_status();
}

inline Result<uint64_t> get_u64(const nlattr* a, const char* name) {
  if (Status s = check_type(a, MNL_TYPE_U64, name); !s) return s.error();
  return mnl_attr_get_u64(a);
}
inline Result<uint32_t> get_u32(const nlattr* a, const char* name) {
  if (Status s = check_type(a, MNL_TYPE_U32, name); !s) return s.error();
  return mnl_attr_get_u32(a);
}
inline Result<uint8_t> get_u8(const nlattr* a, const char* name) {
  if (Status s = check_type(a, MNL_TYPE_U8, name); !s) return s.error();
  return mnl_attr_get_u8(a);
}
inline Result<std::string> get_str(const nlattr* a, const char* name) {
  if (Status s = check_type(a, MNL_TYPE_NUL_STRING, name); !s) return s.error();
  return std::string(mnl_attr_get_str(a));
}

// Reads a required attribute into `out`.
template <typename T, typename Getter>
Status required(const AttrTable& t, int type, const char* name, Getter get, T& out) {
  if (t[type] == nullptr) return malformed(std::string("missing attribute ") + name);
  auto r = get(t[type], name);
  if (!r) return r.error();
  out = std::move(r).value();
  return ok_status();
}

// Reads an optional attribute into `out`; absent is fine, malformed is not.
template <typename T, typename Getter>
Status optional(const AttrTable& t, int type, const char* name, Getter get, std::optional<T>& out) {
  if (t[type] == nullptr) return ok_status();
  auto r = get(t[type], name);
  if (!r) return r.error();
  out = std::move(r).value();
  return ok_status();
}

// Runs a chain of attribute reads, stopping at the first failure.
template <typename... S>
Status all(S&&... statuses) {
  Status result = ok_status();
  ((result = result ? std::forward<S>(statuses) : result), ...);
  return result;
}

inline Bytes build(uint16_t cmd, uint16_t flags, const std::function<void(nlmsghdr*)>& add_attrs) {
  Bytes buf(256);
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
  nlh->nlmsg_type = message_type(cmd);
  nlh->nlmsg_flags = NLM_F_REQUEST | flags;
  if (add_attrs) add_attrs(nlh);
  buf.resize(nlh->nlmsg_len);
  return buf;
}

// The text of an extended ack (NLMSGERR_ATTR_MSG), if the kernel sent one.
inline std::string extack_message(const nlmsghdr& msg, std::size_t tlv_offset) {
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

// `what` names the request ("RDMA_NLDEV_CMD_STAT_GET", "RTM_GETDCB ...").
inline Error kernel_error(const std::string& what, int err, const std::string& extack) {
  std::string text = what + ": " + std::strerror(err);
  if (!extack.empty()) text += " (" + extack + ")";
  return Error{err, text};
}

// Decodes a dump whose every message parses into one T.
template <typename T>
Result<std::vector<T>> decode_all(const Reply& reply, uint16_t cmd,
                                  Result<T> (*parse)(const nlmsghdr&)) {
  std::vector<T> out;
  Status s = walk_reply(reply, cmd, [&](const nlmsghdr& m) -> Status {
    auto item = parse(m);
    if (!item) return item.error();
    out.push_back(std::move(item).value());
    return ok_status();
  });
  if (!s) return s.error();
  return out;
}

// A doit answered with one message of `reply_cmd` and the ACK.
inline Result<AttrTable> single_answer(const Reply& reply, uint16_t cmd, uint16_t reply_cmd) {
  std::optional<AttrTable> table;
  Status s = walk_reply(
      reply, cmd,
      [&](const nlmsghdr& m) -> Status {
        if (table) return malformed("more than one answer to " + command_name(cmd));
        auto t = table_of_message(m, command_name(cmd).c_str());
        if (!t) return t.error();
        table = *t;
        return ok_status();
      },
      reply_cmd);
  if (!s) return s.error();
  if (!table) return malformed("no answer to " + command_name(cmd));
  return *table;
}

// A write answered with one message of `reply_cmd` and the ACK, whose
// content does not matter.
inline Status acknowledged(const Reply& reply, uint16_t cmd, uint16_t reply_cmd) {
  auto t = single_answer(reply, cmd, reply_cmd);
  if (!t) return t.error();
  return ok_status();
}

// Reads a STAT_HWCOUNTERS table; the table itself is required.
inline Status read_hw_counters(const nlattr* nest, std::vector<HwCounter>& out) {
  if (nest == nullptr) return malformed("missing attribute STAT_HWCOUNTERS");
  return for_each_attr(mnl_attr_get_payload(nest), mnl_attr_get_payload_len(nest),
                       "STAT_HWCOUNTERS", [&](const nlattr* entry) -> Status {
                         if (mnl_attr_get_type(entry) != RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)
                           return ok_status();
                         auto e = table_of_nest(entry, "STAT_HWCOUNTER_ENTRY");
                         if (!e) return e.error();
                         HwCounter c;
                         Status es = all(required(*e, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME,
                                                  "STAT_HWCOUNTER_ENTRY_NAME", get_str, c.name),
                                         required(*e, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE,
                                                  "STAT_HWCOUNTER_ENTRY_VALUE", get_u64, c.value));
                         if (!es) return es;
                         out.push_back(std::move(c));
                         return ok_status();
                       });
}

// Calls fn for every entry of type `entry_type` in a table nest.
template <typename Fn>
Status for_each_entry(const nlattr* table, uint16_t entry_type, const char* where, Fn&& fn) {
  return for_each_attr(mnl_attr_get_payload(table), mnl_attr_get_payload_len(table), where,
                       [&](const nlattr* entry) -> Status {
                         if (mnl_attr_get_type(entry) != entry_type) return ok_status();
                         return fn(entry);
                       });
}

}  // namespace rdma_exporter::nldev::wire
