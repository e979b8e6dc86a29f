#pragma once

// Helpers shared by the nldev codecs, internal to common/kernel/nldev:
// the nldev attribute table, request building, and whole-reply decoding, on
// top of the generic netlink attribute access.

#include <libmnl/libmnl.h>
#include <rdma/rdma_netlink.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/kernel/netlink/attributes.hpp"
#include "common/kernel/netlink/messages.hpp"
#include "common/kernel/nldev/codec.hpp"

namespace rdma_exporter::nldev::wire {

using netlink::all;
using netlink::for_each_attr;
using netlink::for_each_entry;
using netlink::get_str;
using netlink::get_u32;
using netlink::get_u64;
using netlink::get_u8;
using netlink::malformed;
using netlink::optional;
using netlink::required;

constexpr std::size_t kMaxAttr = RDMA_NLDEV_ATTR_MAX;
using AttrTable = netlink::AttrTable<kMaxAttr>;

inline Result<AttrTable> table_of(const void* data, std::size_t len, const char* where) {
  return netlink::table_of<kMaxAttr>(data, len, where);
}

inline Result<AttrTable> table_of_message(const nlmsghdr& msg, const char* where) {
  return table_of(mnl_nlmsg_get_payload(&msg), mnl_nlmsg_get_payload_len(&msg), where);
}

inline Result<AttrTable> table_of_nest(const nlattr* nest, const char* where) {
  return netlink::table_of_nest<kMaxAttr>(nest, where);
}

inline Status fill_table_of_nest(AttrTable& table, const nlattr* nest, const char* where) {
  return netlink::fill_table_of_nest<kMaxAttr>(table, nest, where);
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
  AttrTable e;
  return for_each_entry(nest, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY, "STAT_HWCOUNTERS",
                        [&](const nlattr* entry) -> Status {
                          if (Status s = fill_table_of_nest(e, entry, "STAT_HWCOUNTER_ENTRY"); !s)
                            return s;
                          HwCounter c;
                          Status es = all(required(e, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME,
                                                   "STAT_HWCOUNTER_ENTRY_NAME", get_str, c.name),
                                          required(e, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE,
                                                   "STAT_HWCOUNTER_ENTRY_VALUE", get_u64, c.value));
                          if (!es) return es;
                          out.push_back(std::move(c));
                          return ok_status();
                        });
}

}  // namespace rdma_exporter::nldev::wire
