#include "common/kernel/nldev/counter_codec.hpp"

#include <array>

#include "common/kernel/nldev/codec.hpp"
#include "common/kernel/nldev/wire.hpp"

namespace rdma_exporter::nldev {
using namespace wire;  // NOLINT(google-build-using-namespace)

namespace {

// A counter set lists at most this many QPs as a range before we call the
// reply implausible.
constexpr uint32_t kMaxQpRange = 1U << 20;
// QP numbers one counter set may list in all, ranges expanded (4 MiB): far
// above the QPs of any real host, and a reply of many range entries must not
// expand into gigabytes.
constexpr std::size_t kMaxQpNumbers = 1U << 20;

Status read_qp_numbers(const nlattr* table, std::vector<uint32_t>& out) {
  if (table == nullptr) return ok_status();  // a set with no QP left
  return for_each_entry(
      table, RDMA_NLDEV_ATTR_RES_QP_ENTRY, "RES_QP", [&](const nlattr* e) -> Status {
        // Each entry holds a QP number or a range: read without a table.
        std::optional<uint32_t> lqpn;
        std::optional<uint32_t> min;
        std::optional<uint32_t> max;
        Status s = for_each_attr(mnl_attr_get_payload(e), mnl_attr_get_payload_len(e),
                                 "RES_QP_ENTRY", [&](const nlattr* a) -> Status {
                                   std::optional<uint32_t>* into = nullptr;
                                   const char* name = nullptr;
                                   switch (mnl_attr_get_type(a)) {
                                     case RDMA_NLDEV_ATTR_RES_LQPN:
                                       into = &lqpn;
                                       name = "RES_LQPN";
                                       break;
                                     case RDMA_NLDEV_ATTR_MIN_RANGE:
                                       into = &min;
                                       name = "MIN_RANGE";
                                       break;
                                     case RDMA_NLDEV_ATTR_MAX_RANGE:
                                       into = &max;
                                       name = "MAX_RANGE";
                                       break;
                                     default:
                                       return ok_status();
                                   }
                                   auto v = get_u32(a, name);
                                   if (!v) return v.error();
                                   *into = *v;
                                   return ok_status();
                                 });
        if (!s) return s;
        const bool range = !lqpn && min && max && *min <= *max && *max - *min < kMaxQpRange;
        if (!lqpn && !range) return malformed("RES_QP_ENTRY without RES_LQPN or a valid range");
        const std::size_t count = lqpn ? 1 : std::size_t{*max - *min} + 1;
        if (out.size() + count > kMaxQpNumbers) {
          return malformed("a counter set with more than " + std::to_string(kMaxQpNumbers) +
                           " QP numbers");
        }
        if (lqpn) {
          out.push_back(*lqpn);
        } else {
          for (uint32_t q = *min;; ++q) {
            out.push_back(q);
            if (q == *max) break;
          }
        }
        return ok_status();
      });
}

// The messages of per-device resource dumps: DEV_INDEX, DEV_NAME and a
// table of entries. Calls parse(entry attributes, item) for each entry, the
// item's device already set, and appends what it makes to `out`.
template <typename T, typename Parse>
Status parse_device_table(const nlmsghdr& msg, uint16_t table_attr, uint16_t entry_attr,
                          const char* entry_name, std::vector<T>& out, Parse&& parse) {
  auto t = table_of_message(msg, entry_name);
  if (!t) return t.error();
  uint32_t dev_index = 0;
  std::string dev_name;
  Status s = all(required(*t, RDMA_NLDEV_ATTR_DEV_INDEX, "DEV_INDEX", get_u32, dev_index),
                 required(*t, RDMA_NLDEV_ATTR_DEV_NAME, "DEV_NAME", get_str, dev_name));
  if (!s) return s;
  const nlattr* table = (*t)[table_attr];
  if (table == nullptr) return ok_status();
  AttrTable et;
  return for_each_entry(table, entry_attr, entry_name, [&](const nlattr* e) -> Status {
    if (Status es = fill_table_of_nest(et, e, entry_name); !es) return es;
    T& item = out.emplace_back();
    item.dev_index = dev_index;
    item.dev_name = dev_name;
    return parse(et, item);
  });
}

Status parse_counter_sets(const nlmsghdr& msg, std::vector<CounterSet>& out) {
  return parse_device_table(
      msg, RDMA_NLDEV_ATTR_STAT_COUNTER, RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY, "STAT_COUNTER_ENTRY",
      out, [](const AttrTable& et, CounterSet& c) {
        return all(
            required(et, RDMA_NLDEV_ATTR_PORT_INDEX, "PORT_INDEX", get_u32, c.port),
            required(et, RDMA_NLDEV_ATTR_STAT_COUNTER_ID, "STAT_COUNTER_ID", get_u32, c.id),
            required(et, RDMA_NLDEV_ATTR_STAT_MODE, "STAT_MODE", get_u32, c.mode),
            optional(et, RDMA_NLDEV_ATTR_RES_TYPE, "RES_TYPE", get_u8, c.qp_type),
            optional(et, RDMA_NLDEV_ATTR_RES_PID, "RES_PID", get_u32, c.pid),
            optional(et, RDMA_NLDEV_ATTR_RES_KERN_NAME, "RES_KERN_NAME", get_str, c.kern_name),
            read_qp_numbers(et[RDMA_NLDEV_ATTR_RES_QP], c.lqpns),
            read_hw_counters(et[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS], c.counters));
      });
}

Status parse_qps(const nlmsghdr& msg, std::vector<Qp>& out) {
  return parse_device_table(
      msg, RDMA_NLDEV_ATTR_RES_QP, RDMA_NLDEV_ATTR_RES_QP_ENTRY, "RES_QP_ENTRY", out,
      [](const AttrTable& et, Qp& q) {
        return all(
            optional(et, RDMA_NLDEV_ATTR_PORT_INDEX, "PORT_INDEX", get_u32, q.port),
            required(et, RDMA_NLDEV_ATTR_RES_LQPN, "RES_LQPN", get_u32, q.lqpn),
            required(et, RDMA_NLDEV_ATTR_RES_TYPE, "RES_TYPE", get_u8, q.type),
            required(et, RDMA_NLDEV_ATTR_RES_STATE, "RES_STATE", get_u8, q.state),
            optional(et, RDMA_NLDEV_ATTR_RES_PID, "RES_PID", get_u32, q.pid),
            optional(et, RDMA_NLDEV_ATTR_RES_KERN_NAME, "RES_KERN_NAME", get_str, q.kern_name));
      });
}

// What every message of a dump decodes to, in one vector.
template <typename T>
Result<std::vector<T>> decode_flat(const Reply& reply, uint16_t cmd,
                                   Status (*parse)(const nlmsghdr&, std::vector<T>&)) {
  std::vector<T> out;
  Status s = walk_reply(reply, cmd, [&](const nlmsghdr& m) { return parse(m, out); });
  if (!s) return s.error();
  return out;
}

}  // namespace

Bytes build_counter_mode_get(uint32_t dev_index, uint32_t port) {
  return build(RDMA_NLDEV_CMD_STAT_GET, NLM_F_ACK, [&](nlmsghdr* n) {
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index);
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_PORT_INDEX, port);
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_STAT_RES, RDMA_NLDEV_ATTR_RES_QP);
    // With STAT_RES=RES_QP and any STAT_MODE, the kernel answers with the mode.
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_STAT_MODE, RDMA_COUNTER_MODE_MANUAL);
  });
}

Bytes build_counter_sets_dump(uint32_t dev_index) {
  return build(RDMA_NLDEV_CMD_STAT_GET, NLM_F_DUMP, [&](nlmsghdr* n) {
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index);
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_STAT_RES, RDMA_NLDEV_ATTR_RES_QP);
  });
}

Bytes build_set_auto_mode(uint32_t dev_index, uint32_t port, uint32_t mask) {
  return build(RDMA_NLDEV_CMD_STAT_SET, NLM_F_ACK, [&](nlmsghdr* n) {
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index);
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_PORT_INDEX, port);
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_STAT_RES, RDMA_NLDEV_ATTR_RES_QP);
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_STAT_MODE, RDMA_COUNTER_MODE_AUTO);
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK, mask);
  });
}

Bytes build_bind_qp(uint32_t dev_index, uint32_t port, uint32_t lqpn,
                    std::optional<uint32_t> counter_id) {
  return build(RDMA_NLDEV_CMD_STAT_SET, NLM_F_ACK, [&](nlmsghdr* n) {
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index);
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_PORT_INDEX, port);
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_STAT_RES, RDMA_NLDEV_ATTR_RES_QP);
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_STAT_MODE, RDMA_COUNTER_MODE_MANUAL);
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_RES_LQPN, lqpn);
    if (counter_id) mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_STAT_COUNTER_ID, *counter_id);
  });
}

Bytes build_unbind_qp(uint32_t dev_index, uint32_t port, uint32_t counter_id, uint32_t lqpn) {
  return build(RDMA_NLDEV_CMD_STAT_DEL, NLM_F_ACK, [&](nlmsghdr* n) {
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index);
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_PORT_INDEX, port);
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_STAT_RES, RDMA_NLDEV_ATTR_RES_QP);
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_STAT_MODE, RDMA_COUNTER_MODE_MANUAL);
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_STAT_COUNTER_ID, counter_id);
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_RES_LQPN, lqpn);
  });
}

Bytes build_qp_dump(uint32_t dev_index) {
  return build(RDMA_NLDEV_CMD_RES_QP_GET, NLM_F_DUMP,
               [&](nlmsghdr* n) { mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index); });
}

Result<CounterMode> decode_counter_mode(const Reply& reply) {
  auto t = single_answer(reply, RDMA_NLDEV_CMD_STAT_GET, RDMA_NLDEV_CMD_STAT_GET);
  if (!t) return t.error();
  CounterMode m;
  std::optional<uint32_t> mask;
  Status s =
      all(required(*t, RDMA_NLDEV_ATTR_STAT_MODE, "STAT_MODE", get_u32, m.mode),
          optional(*t, RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK, "STAT_AUTO_MODE_MASK", get_u32, mask));
  if (!s) return s.error();
  m.auto_mask = mask.value_or(0);
  return m;
}

Result<std::vector<CounterSet>> decode_counter_sets(const Reply& reply) {
  return decode_flat<CounterSet>(reply, RDMA_NLDEV_CMD_STAT_GET, parse_counter_sets);
}

Status decode_set_auto_mode(const Reply& reply) {
  return acknowledged(reply, RDMA_NLDEV_CMD_STAT_SET, RDMA_NLDEV_CMD_STAT_SET);
}

Result<BindResult> decode_bind_qp(const Reply& reply) {
  auto t = single_answer(reply, RDMA_NLDEV_CMD_STAT_SET, RDMA_NLDEV_CMD_STAT_SET);
  if (!t) return t.error();
  BindResult b;
  Status s =
      all(required(*t, RDMA_NLDEV_ATTR_STAT_COUNTER_ID, "STAT_COUNTER_ID", get_u32, b.counter_id),
          required(*t, RDMA_NLDEV_ATTR_RES_LQPN, "RES_LQPN", get_u32, b.lqpn));
  if (!s) return s.error();
  return b;
}

Status decode_unbind_qp(const Reply& reply) {
  return acknowledged(reply, RDMA_NLDEV_CMD_STAT_DEL, RDMA_NLDEV_CMD_STAT_SET);
}

Result<std::vector<Qp>> decode_qps(const Reply& reply) {
  return decode_flat<Qp>(reply, RDMA_NLDEV_CMD_RES_QP_GET, parse_qps);
}

std::string qp_type_name(uint8_t type) {
  switch (type) {
    case 0:
      return "SMI";
    case 1:
      return "GSI";
    case 2:
      return "RC";
    case 3:
      return "UC";
    case 4:
      return "UD";
    case 5:
      return "RAW_IPV6";
    case 6:
      return "RAW_ETHERTYPE";
    case 8:
      return "RAW_PACKET";
    case 9:
      return "XRC_INI";
    case 10:
      return "XRC_TGT";
    case 0xff:
      return "DRIVER";
    default:
      return "UNKNOWN";
  }
}

std::optional<uint8_t> qp_type_from_name(const std::string& name) {
  for (unsigned t : {0U, 1U, 2U, 3U, 4U, 5U, 6U, 8U, 9U, 10U, 0xffU}) {
    if (qp_type_name(static_cast<uint8_t>(t)) == name) return static_cast<uint8_t>(t);
  }
  return std::nullopt;
}

std::string qp_state_name(uint8_t state) {
  static constexpr std::array<const char*, 7> kNames = {"RESET", "INIT", "RTR", "RTS",
                                                        "SQD",   "SQE",  "ERR"};
  return state < kNames.size() ? kNames[state] : "UNKNOWN";
}

std::string counter_mode_name(uint32_t mode) {
  switch (mode) {
    case RDMA_COUNTER_MODE_NONE:
      return "none";
    case RDMA_COUNTER_MODE_AUTO:
      return "auto";
    case RDMA_COUNTER_MODE_MANUAL:
      return "manual";
    default:
      return "unknown";
  }
}

std::string auto_mask_name(uint32_t mask) {
  std::string out;
  if ((mask & RDMA_COUNTER_MASK_QP_TYPE) != 0U) out = "qp_type";
  if ((mask & RDMA_COUNTER_MASK_PID) != 0U) out += out.empty() ? "pid" : ",pid";
  return out;
}

}  // namespace rdma_exporter::nldev
