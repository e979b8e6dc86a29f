#pragma once

// Validated access to netlink attributes, for any netlink family (nldev,
// rtnetlink, ...): every malformed input becomes an Error, never a crash or a
// silently short result.

#include <libmnl/libmnl.h>
#include <linux/netlink.h>

#include <array>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "common/result.hpp"

namespace rdma_exporter::netlink {

inline Error malformed(const std::string& what) {
  return Error{EBADMSG, "malformed netlink reply: " + what};
}

// Attributes indexed by type, for a family whose largest type is below N.
template <std::size_t N>
using AttrTable = std::array<const nlattr*, N>;

// The walk over attributes runs for every attribute of every reply (a
// million at 100,000 QPs), where a call into libmnl per step costs more than
// the step: these inline steps make the checks of mnl_attr_ok() and the moves
// of mnl_attr_next() and mnl_attr_get_type() on linux/netlink.h's layout.
inline uint16_t attr_type(const nlattr* a) {
  return static_cast<uint16_t>(a->nla_type & NLA_TYPE_MASK);
}
inline bool attr_fits(const nlattr* a, int remaining) {
  return remaining >= static_cast<int>(sizeof(nlattr)) && a->nla_len >= sizeof(nlattr) &&
         static_cast<int>(a->nla_len) <= remaining;
}

// Calls fn for every attribute in [data, data + len). Fails when the bytes do
// not hold whole attributes: a truncated message must never look complete.
template <typename Fn>
Status for_each_attr(const void* data, std::size_t len, const char* where, Fn&& fn) {
  const auto* attr = static_cast<const nlattr*>(data);
  auto remaining = static_cast<int>(len);
  while (attr_fits(attr, remaining)) {
    if (Status s = fn(attr); !s) return s;
    const auto step = static_cast<int>(NLA_ALIGN(attr->nla_len));
    remaining -= step;
    attr = reinterpret_cast<const nlattr*>(reinterpret_cast<const char*>(attr) + step);
  }
  if (remaining > 0) {
    return malformed(std::string("truncated attribute in ") + where + " (" +
                     std::to_string(remaining) + " bytes left)");
  }
  return ok_status();
}

// Indexes the attributes by type into `table`, cleared first; unknown types
// (newer kernels) are ignored. For loops over many entries: one table is
// filled again for each.
template <std::size_t N>
Status fill_table(AttrTable<N>& table, const void* data, std::size_t len, const char* where) {
  table.fill(nullptr);
  return for_each_attr(data, len, where, [&](const nlattr* a) -> Status {
    const uint16_t type = attr_type(a);
    if (type < N) table[type] = a;
    return ok_status();
  });
}

template <std::size_t N>
Status fill_table_of_nest(AttrTable<N>& table, const nlattr* nest, const char* where) {
  return fill_table<N>(table, mnl_attr_get_payload(nest), mnl_attr_get_payload_len(nest), where);
}

template <std::size_t N>
Result<AttrTable<N>> table_of(const void* data, std::size_t len, const char* where) {
  AttrTable<N> table;
  if (Status s = fill_table<N>(table, data, len, where); !s) return s.error();
  return table;
}

template <std::size_t N>
Result<AttrTable<N>> table_of_nest(const nlattr* nest, const char* where) {
  return table_of<N>(mnl_attr_get_payload(nest), mnl_attr_get_payload_len(nest), where);
}

// Calls fn for every entry of type `entry_type` in a table nest.
template <typename Fn>
Status for_each_entry(const nlattr* table, uint16_t entry_type, const char* where, Fn&& fn) {
  return for_each_attr(mnl_attr_get_payload(table), mnl_attr_get_payload_len(table), where,
                       [&](const nlattr* entry) -> Status {
                         if (attr_type(entry) != entry_type) return ok_status();
                         return fn(entry);
                       });
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
template <typename Table, typename T, typename Getter>
Status required(const Table& t, int type, const char* name, Getter get, T& out) {
  if (t[type] == nullptr) return malformed(std::string("missing attribute ") + name);
  auto r = get(t[type], name);
  if (!r) return r.error();
  out = std::move(r).value();
  return ok_status();
}

// Reads an optional attribute into `out`; absent is fine, malformed is not.
template <typename Table, typename T, typename Getter>
Status optional(const Table& t, int type, const char* name, Getter get, std::optional<T>& out) {
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

}  // namespace rdma_exporter::netlink
