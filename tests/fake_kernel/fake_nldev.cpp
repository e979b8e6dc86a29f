#include "tests/fake_kernel/fake_nldev.hpp"

#include <rdma/rdma_netlink.h>

#include <algorithm>

namespace rdma_exporter::testing {
namespace {

SeenRequest decode_request(std::span<const uint8_t> bytes) {
  SeenRequest r;
  const auto* nlh = reinterpret_cast<const nlmsghdr*>(bytes.data());
  r.cmd = RDMA_NL_GET_OP(nlh->nlmsg_type);
  r.flags = nlh->nlmsg_flags;
  for (const nlattr* a : attributes(nlh)) {
    if (mnl_attr_get_type(a) == RDMA_NLDEV_ATTR_DEV_INDEX) r.dev_index = mnl_attr_get_u32(a);
    if (mnl_attr_get_type(a) == RDMA_NLDEV_ATTR_PORT_INDEX) r.port = mnl_attr_get_u32(a);
  }
  return r;
}

NlMessage device_message(const FakeDevice& d, uint16_t cmd) {
  NlMessage m(nldev_type(cmd), NLM_F_MULTI);
  m.u32(RDMA_NLDEV_ATTR_DEV_INDEX, d.index).str(RDMA_NLDEV_ATTR_DEV_NAME, d.name);
  return m;
}

}  // namespace

const FakeDevice* FakeNldev::find(std::optional<uint32_t> index) const {
  if (!index) return nullptr;
  for (const auto& d : devices) {
    if (d.index == *index) return &d;
  }
  return nullptr;
}

std::size_t FakeNldev::requests_for(uint32_t dev_index) const {
  return static_cast<std::size_t>(
      std::count_if(requests.begin(), requests.end(),
                    [&](const auto& r) { return r.dev_index && *r.dev_index == dev_index; }));
}

nldev::Reply FakeNldev::dump(uint16_t cmd, std::vector<Bytes> messages) {
  (void)cmd;
  if (interrupt_next_dumps > 0) {
    --interrupt_next_dumps;
    for (auto& m : messages) reinterpret_cast<nlmsghdr*>(m.data())->nlmsg_flags |= NLM_F_DUMP_INTR;
  }
  nldev::Reply reply;
  std::vector<Bytes> part;
  for (auto& m : messages) {
    part.push_back(std::move(m));
    if (part.size() == messages_per_datagram) {
      reply.datagrams.push_back(datagram(part));
      part.clear();
    }
  }
  part.push_back(done_message());
  reply.datagrams.push_back(datagram(part));
  return reply;
}

Result<nldev::Reply> FakeNldev::exchange(std::span<const uint8_t> request) {
  if (absent) return Error::system(EPROTONOSUPPORT, "open NETLINK_RDMA socket");
  const SeenRequest req = decode_request(request);
  requests.push_back(req);
  const Bytes original(request.begin(), request.end());
  nldev::Reply reply;
  const FakeDevice* dev = find(req.dev_index);

  switch (req.cmd) {
    case RDMA_NLDEV_CMD_GET: {
      std::vector<Bytes> msgs;
      for (const auto& d : devices) {
        auto m = device_message(d, RDMA_NLDEV_CMD_GET);
        m.u32(RDMA_NLDEV_ATTR_PORT_INDEX, static_cast<uint32_t>(d.ports.size()));
        if (!d.fw_version.empty()) m.str(RDMA_NLDEV_ATTR_FW_VERSION, d.fw_version);
        m.u64(RDMA_NLDEV_ATTR_NODE_GUID, d.node_guid)
            .u64(RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, d.sys_image_guid)
            .u8(RDMA_NLDEV_ATTR_DEV_NODE_TYPE, d.node_type)
            .str(RDMA_NLDEV_ATTR_DEV_PROTOCOL, d.protocol);
        msgs.push_back(m.bytes());
      }
      reply = dump(req.cmd, std::move(msgs));
      break;
    }
    case RDMA_NLDEV_CMD_PORT_GET: {
      if (dev == nullptr) {
        reply.datagrams.push_back(error_message(-ENODEV, "", 0, original));
        break;
      }
      std::vector<Bytes> msgs;
      for (const auto& p : dev->ports) {
        auto m = device_message(*dev, RDMA_NLDEV_CMD_PORT_GET);
        m.u32(RDMA_NLDEV_ATTR_PORT_INDEX, p.index);
        if (p.lid) m.u32(RDMA_NLDEV_ATTR_LID, *p.lid);
        if (p.sm_lid) m.u32(RDMA_NLDEV_ATTR_SM_LID, *p.sm_lid);
        if (p.lmc) m.u8(RDMA_NLDEV_ATTR_LMC, *p.lmc);
        m.u8(RDMA_NLDEV_ATTR_PORT_STATE, p.state).u8(RDMA_NLDEV_ATTR_PORT_PHYS_STATE, p.phys_state);
        if (!p.netdev.empty()) {
          m.u32(RDMA_NLDEV_ATTR_NDEV_INDEX, p.netdev_index)
              .str(RDMA_NLDEV_ATTR_NDEV_NAME, p.netdev);
        }
        msgs.push_back(m.bytes());
      }
      reply = dump(req.cmd, std::move(msgs));
      break;
    }
    case RDMA_NLDEV_CMD_STAT_GET: {
      const FakePort* port = nullptr;
      if (dev != nullptr && req.port) {
        for (const auto& p : dev->ports) {
          if (p.index == *req.port) port = &p;
        }
      }
      if (port == nullptr) {
        reply.datagrams.push_back(error_message(-EINVAL, "Invalid port index", 0, original));
        break;
      }
      if (port->stat_error != 0) {
        reply.datagrams.push_back(error_message(-port->stat_error, "", 0, original));
        break;
      }
      NlMessage m(nldev_type(RDMA_NLDEV_CMD_STAT_GET));
      m.u32(RDMA_NLDEV_ATTR_DEV_INDEX, dev->index).u32(RDMA_NLDEV_ATTR_PORT_INDEX, port->index);
      m.begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
      for (const auto& [name, value] : port->counters) {
        m.begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)
            .str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, name)
            .u64(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, value)
            .end_nest();
      }
      m.end_nest();
      // The answer and the ACK arrive as two datagrams, as from the kernel.
      reply.datagrams.push_back(m.bytes());
      reply.datagrams.push_back(ack_message());
      break;
    }
    case RDMA_NLDEV_CMD_RES_GET: {
      std::vector<Bytes> msgs;
      for (const auto& d : devices) {
        auto m = device_message(d, RDMA_NLDEV_CMD_RES_GET);
        m.begin_nest(RDMA_NLDEV_ATTR_RES_SUMMARY);
        for (const auto& [name, curr] : d.resources) {
          m.begin_nest(RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY)
              .str(RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME, name)
              .u64(RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR, curr)
              .end_nest();
        }
        m.end_nest();
        msgs.push_back(m.bytes());
      }
      reply = dump(req.cmd, std::move(msgs));
      break;
    }
    default:
      reply.datagrams.push_back(error_message(-EOPNOTSUPP, "", 0, original));
  }
  if (tamper) tamper(reply);
  return reply;
}

}  // namespace rdma_exporter::testing
