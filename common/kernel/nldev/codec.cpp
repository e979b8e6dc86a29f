#include "common/kernel/nldev/codec.hpp"

#include <libmnl/libmnl.h>
#include <rdma/rdma_netlink.h>

#include <array>
#include <cstdio>

#include "common/kernel/nldev/wire.hpp"

namespace rdma_exporter::nldev {
using namespace wire;  // NOLINT(google-build-using-namespace)

uint16_t message_type(uint16_t cmd) {
  return RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd);
}

std::string command_name(uint16_t cmd) {
  switch (cmd) {
    case RDMA_NLDEV_CMD_GET:
      return "RDMA_NLDEV_CMD_GET";
    case RDMA_NLDEV_CMD_PORT_GET:
      return "RDMA_NLDEV_CMD_PORT_GET";
    case RDMA_NLDEV_CMD_RES_GET:
      return "RDMA_NLDEV_CMD_RES_GET";
    case RDMA_NLDEV_CMD_RES_QP_GET:
      return "RDMA_NLDEV_CMD_RES_QP_GET";
    case RDMA_NLDEV_CMD_STAT_SET:
      return "RDMA_NLDEV_CMD_STAT_SET";
    case RDMA_NLDEV_CMD_STAT_GET:
      return "RDMA_NLDEV_CMD_STAT_GET";
    case RDMA_NLDEV_CMD_STAT_DEL:
      return "RDMA_NLDEV_CMD_STAT_DEL";
    case RDMA_NLDEV_CMD_STAT_GET_STATUS:
      return "RDMA_NLDEV_CMD_STAT_GET_STATUS";
    default:
      return "RDMA_NLDEV command " + std::to_string(cmd);
  }
}

Bytes build_device_dump() {
  return build(RDMA_NLDEV_CMD_GET, NLM_F_DUMP, nullptr);
}

Bytes build_port_dump(uint32_t dev_index) {
  return build(RDMA_NLDEV_CMD_PORT_GET, NLM_F_DUMP,
               [&](nlmsghdr* n) { mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index); });
}

Bytes build_port_counters_get(uint32_t dev_index, uint32_t port) {
  return build(RDMA_NLDEV_CMD_STAT_GET, NLM_F_ACK, [&](nlmsghdr* n) {
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index);
    mnl_attr_put_u32(n, RDMA_NLDEV_ATTR_PORT_INDEX, port);
  });
}

Bytes build_resource_summary_dump() {
  return build(RDMA_NLDEV_CMD_RES_GET, NLM_F_DUMP, nullptr);
}

Status walk_reply(const Reply& reply, uint16_t cmd,
                  const std::function<Status(const nlmsghdr&)>& on_message,
                  std::optional<uint16_t> reply_cmd) {
  return netlink::walk_messages(reply, message_type(reply_cmd.value_or(cmd)), command_name(cmd),
                                on_message);
}

Result<Device> parse_device(const nlmsghdr& msg) {
  auto t = table_of_message(msg, "device");
  if (!t) return t.error();
  Device d;
  std::optional<uint32_t> ports;
  Status s =
      all(required(*t, RDMA_NLDEV_ATTR_DEV_INDEX, "DEV_INDEX", get_u32, d.index),
          required(*t, RDMA_NLDEV_ATTR_DEV_NAME, "DEV_NAME", get_str, d.name),
          optional(*t, RDMA_NLDEV_ATTR_PORT_INDEX, "PORT_INDEX", get_u32, ports),
          optional(*t, RDMA_NLDEV_ATTR_FW_VERSION, "FW_VERSION", get_str, d.fw_version),
          optional(*t, RDMA_NLDEV_ATTR_NODE_GUID, "NODE_GUID", get_u64, d.node_guid),
          optional(*t, RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, "SYS_IMAGE_GUID", get_u64, d.sys_image_guid),
          optional(*t, RDMA_NLDEV_ATTR_DEV_NODE_TYPE, "DEV_NODE_TYPE", get_u8, d.node_type),
          optional(*t, RDMA_NLDEV_ATTR_DEV_PROTOCOL, "DEV_PROTOCOL", get_str, d.protocol));
  if (!s) return s.error();
  d.port_count = ports.value_or(0);
  return d;
}

Result<Port> parse_port(const nlmsghdr& msg) {
  auto t = table_of_message(msg, "port");
  if (!t) return t.error();
  Port p;
  Status s =
      all(required(*t, RDMA_NLDEV_ATTR_DEV_INDEX, "DEV_INDEX", get_u32, p.dev_index),
          required(*t, RDMA_NLDEV_ATTR_DEV_NAME, "DEV_NAME", get_str, p.dev_name),
          required(*t, RDMA_NLDEV_ATTR_PORT_INDEX, "PORT_INDEX", get_u32, p.index),
          optional(*t, RDMA_NLDEV_ATTR_PORT_STATE, "PORT_STATE", get_u8, p.state),
          optional(*t, RDMA_NLDEV_ATTR_PORT_PHYS_STATE, "PORT_PHYS_STATE", get_u8, p.phys_state),
          optional(*t, RDMA_NLDEV_ATTR_NDEV_INDEX, "NDEV_INDEX", get_u32, p.netdev_index),
          optional(*t, RDMA_NLDEV_ATTR_NDEV_NAME, "NDEV_NAME", get_str, p.netdev_name),
          optional(*t, RDMA_NLDEV_ATTR_LID, "LID", get_u32, p.lid),
          optional(*t, RDMA_NLDEV_ATTR_SM_LID, "SM_LID", get_u32, p.sm_lid),
          optional(*t, RDMA_NLDEV_ATTR_LMC, "LMC", get_u8, p.lmc));
  if (!s) return s.error();
  return p;
}

Result<PortCounters> parse_port_counters(const nlmsghdr& msg) {
  auto t = table_of_message(msg, "port counters");
  if (!t) return t.error();
  PortCounters pc;
  Status s = all(required(*t, RDMA_NLDEV_ATTR_DEV_INDEX, "DEV_INDEX", get_u32, pc.dev_index),
                 required(*t, RDMA_NLDEV_ATTR_PORT_INDEX, "PORT_INDEX", get_u32, pc.port));
  if (!s) return s.error();
  s = read_hw_counters((*t)[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS], pc.counters);
  if (!s) return s.error();
  return pc;
}

Result<ResourceSummary> parse_resource_summary(const nlmsghdr& msg) {
  auto t = table_of_message(msg, "resource summary");
  if (!t) return t.error();
  ResourceSummary rs;
  Status s = all(required(*t, RDMA_NLDEV_ATTR_DEV_INDEX, "DEV_INDEX", get_u32, rs.dev_index),
                 required(*t, RDMA_NLDEV_ATTR_DEV_NAME, "DEV_NAME", get_str, rs.dev_name));
  if (!s) return s.error();
  const nlattr* nest = (*t)[RDMA_NLDEV_ATTR_RES_SUMMARY];
  if (nest == nullptr) return malformed("missing attribute RES_SUMMARY");
  s = for_each_attr(mnl_attr_get_payload(nest), mnl_attr_get_payload_len(nest), "RES_SUMMARY",
                    [&](const nlattr* entry) -> Status {
                      if (mnl_attr_get_type(entry) != RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY)
                        return ok_status();
                      auto e = table_of_nest(entry, "RES_SUMMARY_ENTRY");
                      if (!e) return e.error();
                      std::string name;
                      uint64_t curr = 0;
                      Status es = all(required(*e, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME,
                                               "RES_SUMMARY_ENTRY_NAME", get_str, name),
                                      required(*e, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR,
                                               "RES_SUMMARY_ENTRY_CURR", get_u64, curr));
                      if (!es) return es;
                      rs.entries.emplace_back(std::move(name), curr);
                      return ok_status();
                    });
  if (!s) return s.error();
  return rs;
}

Result<std::vector<Device>> decode_devices(const Reply& reply) {
  return decode_all<Device>(reply, RDMA_NLDEV_CMD_GET, parse_device);
}

Result<std::vector<Port>> decode_ports(const Reply& reply) {
  return decode_all<Port>(reply, RDMA_NLDEV_CMD_PORT_GET, parse_port);
}

Result<PortCounters> decode_port_counters(const Reply& reply) {
  auto all_counters = decode_all<PortCounters>(reply, RDMA_NLDEV_CMD_STAT_GET, parse_port_counters);
  if (!all_counters) return all_counters.error();
  if (all_counters->size() != 1) {
    return malformed("expected one STAT_GET message, got " + std::to_string(all_counters->size()));
  }
  return std::move(all_counters->front());
}

Result<std::vector<ResourceSummary>> decode_resource_summaries(const Reply& reply) {
  return decode_all<ResourceSummary>(reply, RDMA_NLDEV_CMD_RES_GET, parse_resource_summary);
}

std::string format_guid(uint64_t guid) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%04x:%04x:%04x:%04x", static_cast<unsigned>(guid >> 48) & 0xffff,
                static_cast<unsigned>(guid >> 32) & 0xffff,
                static_cast<unsigned>(guid >> 16) & 0xffff, static_cast<unsigned>(guid) & 0xffff);
  return buf;
}

}  // namespace rdma_exporter::nldev
