#include "common/kernel/nldev/optional_counter_codec.hpp"

#include <set>

#include "common/kernel/nldev/codec.hpp"
#include "common/kernel/nldev/wire.hpp"

namespace rdma_exporter::nldev {
using namespace wire;  // NOLINT(google-build-using-namespace)

Bytes build_counter_status_get(uint32_t dev_index, uint32_t port) {
  return build(RDMA_NLDEV_CMD_STAT_GET_STATUS, NLM_F_ACK, [&](nlmsghdr* n) {
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index);
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_PORT_INDEX, port);
  });
}

Bytes build_set_optional_counters(uint32_t dev_index, uint32_t port,
                                  const std::vector<uint32_t>& indices) {
  Bytes buf(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* n = mnl_nlmsg_put_header(buf.data());
  n->nlmsg_type = message_type(RDMA_NLDEV_CMD_STAT_SET);
  n->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index);
  mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_PORT_INDEX, port);
  nlattr* table = mnl_attr_nest_start(n, RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
  for (uint32_t index : indices) {
    // A driver's table holds a few hundred counters at most; beyond the
    // buffer the request would not be one the kernel can take either.
    if (!mnl_attr_put_u32_check(n, buf.size(), RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX, index)) break;
  }
  mnl_attr_nest_end(n, table);
  buf.resize(n->nlmsg_len);
  return buf;
}

Result<PortCounterStatus> decode_counter_status(const Reply& reply) {
  auto t = single_answer(reply, RDMA_NLDEV_CMD_STAT_GET_STATUS, RDMA_NLDEV_CMD_STAT_GET_STATUS);
  if (!t) return t.error();
  PortCounterStatus st;
  Status s = all(required(*t, RDMA_NLDEV_ATTR_DEV_INDEX, "DEV_INDEX", get_u32, st.dev_index),
                 required(*t, RDMA_NLDEV_ATTR_PORT_INDEX, "PORT_INDEX", get_u32, st.port));
  if (!s) return s.error();
  const nlattr* table = (*t)[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS];
  if (table == nullptr) return malformed("missing attribute STAT_HWCOUNTERS");
  std::set<uint32_t> seen;
  s = for_each_entry(
      table, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY, "STAT_HWCOUNTERS",
      [&](const nlattr* entry) -> Status {
        auto e = table_of_nest(entry, "STAT_HWCOUNTER_ENTRY");
        if (!e) return e.error();
        HwCounterStatus c;
        std::optional<uint8_t> dynamic;
        Status es = all(required(*e, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME,
                                 "STAT_HWCOUNTER_ENTRY_NAME", get_str, c.name),
                        required(*e, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX, "STAT_HWCOUNTER_INDEX",
                                 get_u32, c.index),
                        optional(*e, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_DYNAMIC,
                                 "STAT_HWCOUNTER_DYNAMIC", get_u8, dynamic));
        if (!es) return es;
        if (!seen.insert(c.index).second) {
          return malformed("STAT_HWCOUNTER_INDEX " + std::to_string(c.index) + " listed twice");
        }
        if (dynamic) c.enabled = *dynamic != 0;
        st.counters.push_back(std::move(c));
        return ok_status();
      });
  if (!s) return s.error();
  return st;
}

Status decode_set_optional_counters(const Reply& reply) {
  return acknowledged(reply, RDMA_NLDEV_CMD_STAT_SET, RDMA_NLDEV_CMD_STAT_SET);
}

}  // namespace rdma_exporter::nldev
