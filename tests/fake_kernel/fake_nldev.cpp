#include "tests/fake_kernel/fake_nldev.hpp"

#include <rdma/rdma_netlink.h>

#include <algorithm>
#include <map>

namespace rdma_exporter::testing {
namespace {

constexpr uint32_t kResQp = RDMA_NLDEV_ATTR_RES_QP;
constexpr uint32_t kAllAutoMasks = RDMA_COUNTER_MASK_QP_TYPE | RDMA_COUNTER_MASK_PID;
constexpr const char* kAutoModeBusy = "Modifying auto mode is not allowed when there is a bound QP";

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

// The top-level attributes of a request, by type. The bytes must outlive it.
class RequestAttrs {
 public:
  explicit RequestAttrs(const Bytes& request) {
    for (const nlattr* a : attributes(reinterpret_cast<const nlmsghdr*>(request.data()))) {
      by_type_[mnl_attr_get_type(a)] = a;
    }
  }
  bool has(uint16_t type) const { return by_type_.count(type) != 0U; }
  const nlattr* get(uint16_t type) const {
    auto it = by_type_.find(type);
    return it == by_type_.end() ? nullptr : it->second;
  }
  // A u32 of the wrong size counts as absent: the kernel's policy rejects it.
  std::optional<uint32_t> u32(uint16_t type) const {
    auto it = by_type_.find(type);
    if (it == by_type_.end() || mnl_attr_validate(it->second, MNL_TYPE_U32) < 0) {
      return std::nullopt;
    }
    return mnl_attr_get_u32(it->second);
  }

 private:
  std::map<uint16_t, const nlattr*> by_type_;
};

NlMessage device_message(const FakeDevice& d, uint16_t cmd, uint16_t flags = NLM_F_MULTI) {
  NlMessage m(nldev_type(cmd), flags);
  m.u32(RDMA_NLDEV_ATTR_DEV_INDEX, d.index).str(RDMA_NLDEV_ATTR_DEV_NAME, d.name);
  return m;
}

// A dump's failure: the kernel reports it in NLMSG_DONE.
netlink::Reply dump_failure(int err) {
  netlink::Reply r;
  r.datagrams.push_back(done_message(-err));
  return r;
}

// A doit's answer and its ACK, as two datagrams like the kernel sends them.
netlink::Reply answer(const NlMessage& m) {
  netlink::Reply r;
  r.datagrams.push_back(m.bytes());
  r.datagrams.push_back(ack_message());
  return r;
}

// --- the per-QP counter model (drivers/infiniband/core/counters.c) ----------

template <typename Device>
auto port_of(Device& d, uint32_t index) -> decltype(&d.ports.front()) {
  for (auto& p : d.ports) {
    if (p.index == index) return &p;
  }
  return nullptr;
}

FakeQp* qp_of(FakeDevice& d, uint32_t lqpn) {
  for (auto& q : d.qps) {
    if (q.lqpn == lqpn) return &q;
  }
  return nullptr;
}

FakeCounterSet* set_of(FakeDevice& d, uint32_t id) {
  for (auto& s : d.counter_sets) {
    if (s.id == id) return &s;
  }
  return nullptr;
}

bool port_has_sets(const FakeDevice& d, uint32_t port) {
  return std::any_of(d.counter_sets.begin(), d.counter_sets.end(),
                     [&](const FakeCounterSet& s) { return s.port == port; });
}

// A set belongs to the kernel when its QPs are kernel QPs (a set never mixes
// user and kernel QPs).
bool set_is_kernel(const FakeDevice& d, uint32_t id) {
  return std::any_of(d.qps.begin(), d.qps.end(),
                     [&](const FakeQp& q) { return q.counter_id == id && !q.pid; });
}

std::vector<uint32_t> qps_of_set(const FakeDevice& d, uint32_t id) {
  std::vector<uint32_t> out;
  for (const auto& q : d.qps) {
    if (q.counter_id == id) out.push_back(q.lqpn);
  }
  std::sort(out.begin(), out.end());
  return out;
}

FakeCounterSet new_set(FakeDevice& d, uint32_t port, uint32_t mode) {
  FakeCounterSet s;
  s.id = d.next_counter_id++;
  s.port = port;
  s.mode = mode;
  for (const auto& name : d.qp_counter_names) s.counters.emplace_back(name, 0);
  return s;
}

// Drops a QP's binding. A set left without QPs is freed; its values stay in
// the port totals (traffic() already counted them there), and a port in
// manual mode whose last set went returns to NONE.
void release_binding(FakeDevice& d, FakeQp& qp) {
  if (!qp.counter_id) return;
  const uint32_t id = *qp.counter_id;
  qp.counter_id.reset();
  if (std::any_of(d.qps.begin(), d.qps.end(),
                  [&](const FakeQp& q) { return q.counter_id == id; })) {
    return;
  }
  auto it = std::find_if(d.counter_sets.begin(), d.counter_sets.end(),
                         [&](const FakeCounterSet& s) { return s.id == id; });
  if (it == d.counter_sets.end()) return;
  const uint32_t port = it->port;
  d.counter_sets.erase(it);
  FakePort* p = port_of(d, port);
  if (p != nullptr && !port_has_sets(d, port) && p->counter_mode == RDMA_COUNTER_MODE_MANUAL) {
    p->counter_mode = RDMA_COUNTER_MODE_NONE;
    p->auto_mask = 0;
  }
}

// rdma_counter_set_auto_mode(): mask 0 turns auto off, leaving MANUAL while
// sets are still bound on the port and NONE otherwise. Asking again for the
// current mode succeeds even with sets bound; any other switch to auto does
// not. Drivers without per-QP counters (rxe) accept it too.
int set_auto_mode(FakeDevice& d, FakePort& p, uint32_t mask) {
  const bool bound = port_has_sets(d, p.index);
  uint32_t mode = RDMA_COUNTER_MODE_AUTO;
  if (mask == 0) mode = bound ? RDMA_COUNTER_MODE_MANUAL : RDMA_COUNTER_MODE_NONE;
  if (p.counter_mode == mode && p.auto_mask == mask) return 0;
  if (mode == RDMA_COUNTER_MODE_AUTO) {
    if ((mask & ~kAllAutoMasks) != 0) return EINVAL;
    if (bound) return EBUSY;
  }
  p.counter_mode = mode;
  p.auto_mask = mask;
  return 0;
}

// rdma_counter_bind_qpn_alloc(): a new manual set for one QP. The kernel's
// answers, in its order: EINVAL while the port is in auto mode; ENOENT for a
// QP number it does not know; EINVAL for a QP on another port; ENOMEM when
// the driver has no per-QP counters, and also for a QP that is already bound
// (every allocate-and-bind failure is reported as ENOMEM). Kernel QPs may be
// bound manually.
int bind_new(FakeDevice& d, FakePort& p, uint32_t lqpn, uint32_t& counter_id) {
  if (p.counter_mode == RDMA_COUNTER_MODE_AUTO) return EINVAL;
  FakeQp* qp = qp_of(d, lqpn);
  if (qp == nullptr) return ENOENT;
  if (qp->port != 0 && qp->port != p.index) return EINVAL;
  if (!d.qp_counters_supported || qp->counter_id) return ENOMEM;
  FakeCounterSet s = new_set(d, p.index, RDMA_COUNTER_MODE_MANUAL);
  counter_id = s.id;
  qp->counter_id = s.id;
  d.counter_sets.push_back(std::move(s));
  p.counter_mode = RDMA_COUNTER_MODE_MANUAL;
  p.auto_mask = 0;
  return 0;
}

// rdma_counter_bind_qpn(): a QP joins an existing set. EINVAL while the port
// is in auto mode; ENOENT for an unknown QP or set; EINVAL when the set and
// the QP differ in owner (kernel or user) or port, or the QP is already
// bound. The set's mode is not checked: a set auto mode left behind after it
// was turned off takes QPs too.
int bind_existing(FakeDevice& d, FakePort& p, uint32_t lqpn, uint32_t counter_id) {
  if (p.counter_mode == RDMA_COUNTER_MODE_AUTO) return EINVAL;
  FakeQp* qp = qp_of(d, lqpn);
  if (qp == nullptr) return ENOENT;
  FakeCounterSet* set = set_of(d, counter_id);
  if (set == nullptr) return ENOENT;
  if (set_is_kernel(d, counter_id) != !qp->pid) return EINVAL;
  if (set->port != qp->port || qp->counter_id) return EINVAL;
  qp->counter_id = counter_id;
  return 0;
}

// rdma_counter_unbind_qpn(): ENOENT for an unknown QP; EINVAL for a QP on
// another port, not bound to that set, or when the port is not in manual
// mode (auto mode's bindings cannot be undone while it is on).
int unbind(FakeDevice& d, FakePort& p, uint32_t lqpn, uint32_t counter_id) {
  FakeQp* qp = qp_of(d, lqpn);
  if (qp == nullptr) return ENOENT;
  if (qp->port != 0 && qp->port != p.index) return EINVAL;
  if (qp->counter_id != counter_id || p.counter_mode != RDMA_COUNTER_MODE_MANUAL) return EINVAL;
  release_binding(d, *qp);
  return 0;
}

// rdma_counter_bind_qp_auto(): a new user QP on a port in auto mode joins
// the set whose criteria it matches, or gets a new one. Kernel QPs never do.
void bind_auto(FakeDevice& d, FakeQp& qp) {
  const FakePort* p = port_of(d, qp.port);
  if (p == nullptr || !qp.pid || p->counter_mode != RDMA_COUNTER_MODE_AUTO) return;
  if (!d.qp_counters_supported) return;  // binding failures are silent
  const bool by_type = (p->auto_mask & RDMA_COUNTER_MASK_QP_TYPE) != 0;
  const bool by_pid = (p->auto_mask & RDMA_COUNTER_MASK_PID) != 0;
  for (const auto& s : d.counter_sets) {
    if (s.port != qp.port || s.mode != RDMA_COUNTER_MODE_AUTO) continue;
    if (by_type && s.qp_type != qp.type) continue;
    if (by_pid && s.pid != qp.pid) continue;
    qp.counter_id = s.id;
    return;
  }
  FakeCounterSet s = new_set(d, qp.port, RDMA_COUNTER_MODE_AUTO);
  if (by_type) s.qp_type = qp.type;
  if (by_pid) s.pid = qp.pid;
  qp.counter_id = s.id;
  d.counter_sets.push_back(std::move(s));
}

// --- dump messages -----------------------------------------------------------

// One protection domain per process: its number is where the process's first
// QP stands in the device's list.
uint32_t pd_number(const FakeDevice& d, uint32_t pid) {
  for (std::size_t i = 0; i < d.qps.size(); ++i) {
    if (d.qps[i].pid == pid) return static_cast<uint32_t>(i + 1);
  }
  return 0;
}

// fill_res_qp_entry(), in the kernel's attribute order.
void put_qp(NlMessage& m, const FakeDevice& d, const FakeQp& q) {
  m.begin_nest(RDMA_NLDEV_ATTR_RES_QP_ENTRY);
  if (q.port != 0) m.u32(RDMA_NLDEV_ATTR_PORT_INDEX, q.port);  // unset until bound to a port
  m.u32(RDMA_NLDEV_ATTR_RES_LQPN, q.lqpn);
  if (q.pid) {
    m.u32(RDMA_NLDEV_ATTR_RES_PDN, pd_number(d, *q.pid)).u32(RDMA_NLDEV_ATTR_RES_PID, *q.pid);
  } else {
    m.str(RDMA_NLDEV_ATTR_RES_KERN_NAME, q.kern_name);
  }
  const bool connected = q.type == 2 || q.type == 3;  // RC, UC
  if (connected) m.u32(RDMA_NLDEV_ATTR_RES_RQPN, 0).u32(RDMA_NLDEV_ATTR_RES_RQ_PSN, 0);
  m.u32(RDMA_NLDEV_ATTR_RES_SQ_PSN, 0);
  if (connected || q.type == 9 || q.type == 10) m.u8(RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE, 0);
  m.u8(RDMA_NLDEV_ATTR_RES_TYPE, q.type).u8(RDMA_NLDEV_ATTR_RES_STATE, q.state);
  m.end_nest();
}

// fill_res_counter_entry().
void put_set(NlMessage& m, const FakeDevice& d, const FakeCounterSet& s) {
  m.begin_nest(RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY)
      .u32(RDMA_NLDEV_ATTR_PORT_INDEX, s.port)
      .u32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID, s.id)
      .u32(RDMA_NLDEV_ATTR_STAT_MODE, s.mode);
  if (s.mode == RDMA_COUNTER_MODE_AUTO) {
    if (s.qp_type) m.u8(RDMA_NLDEV_ATTR_RES_TYPE, *s.qp_type);
    if (s.pid) m.u32(RDMA_NLDEV_ATTR_RES_PID, *s.pid);
  }
  m.begin_nest(RDMA_NLDEV_ATTR_RES_QP);
  for (uint32_t lqpn : qps_of_set(d, s.id)) {
    m.begin_nest(RDMA_NLDEV_ATTR_RES_QP_ENTRY).u32(RDMA_NLDEV_ATTR_RES_LQPN, lqpn).end_nest();
  }
  m.end_nest();
  m.begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
  for (const auto& [name, value] : s.counters) {
    m.begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)
        .str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, name)
        .u64(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, value)
        .end_nest();
  }
  m.end_nest();
  m.end_nest();
}

// res_get_common_dumpit(): a device's objects as table entries, at most
// `per_message` to a message. Objects on other ports than the one asked for
// are skipped without taking room, so a message may end up with an empty
// table; a device with no object at all answers with no message.
template <typename T, typename Put>
std::vector<Bytes> paged_dump(const FakeDevice& d, uint16_t cmd, uint16_t table,
                              const std::vector<const T*>& items, std::optional<uint32_t> port,
                              std::size_t per_message, Put put) {
  const std::size_t per = std::max<std::size_t>(per_message, 1);
  std::vector<Bytes> out;
  std::size_t i = 0;
  while (i < items.size()) {
    NlMessage m = device_message(d, cmd);
    m.begin_nest(table);
    std::size_t n = 0;
    for (; i < items.size(); ++i) {
      if (port && items[i]->port != *port) continue;
      if (n == per) break;
      put(m, d, *items[i]);
      ++n;
    }
    m.end_nest();
    out.push_back(m.bytes());
  }
  return out;
}

}  // namespace

std::vector<FakeOptionalCounter> mlx5_optional_counters() {
  // drivers/infiniband/hw/mlx5/counters.c: congestion control, then the
  // per-port RDMA traffic counters.
  return {{"cc_rx_ce_pkts"}, {"cc_rx_cnp_pkts"},  {"cc_tx_cnp_pkts"}, {"rdma_tx_packets"},
          {"rdma_tx_bytes"}, {"rdma_rx_packets"}, {"rdma_rx_bytes"}};
}

const FakeDevice* FakeNldev::find(std::optional<uint32_t> index) const {
  if (!index) return nullptr;
  for (const auto& d : devices) {
    if (d.index == *index) return &d;
  }
  return nullptr;
}

FakeDevice* FakeNldev::device(uint32_t dev_index) {
  for (auto& d : devices) {
    if (d.index == dev_index) return &d;
  }
  return nullptr;
}

std::size_t FakeNldev::requests_for(uint32_t dev_index) const {
  return static_cast<std::size_t>(
      std::count_if(requests.begin(), requests.end(),
                    [&](const auto& r) { return r.dev_index && *r.dev_index == dev_index; }));
}

// --- simulation ----------------------------------------------------------------

uint32_t FakeNldev::create_qp(uint32_t dev_index, uint32_t port, uint8_t type,
                              std::optional<uint32_t> pid, const std::string& kern_name) {
  FakeDevice* d = device(dev_index);
  if (d == nullptr) return 0;
  FakeQp qp;
  qp.lqpn = d->next_lqpn++;
  qp.port = port;
  qp.type = type;
  qp.pid = pid;
  if (!pid) qp.kern_name = kern_name;
  bind_auto(*d, qp);
  d->qps.push_back(std::move(qp));
  return d->qps.back().lqpn;
}

void FakeNldev::destroy_qp(uint32_t dev_index, uint32_t lqpn) {
  FakeDevice* d = device(dev_index);
  if (d == nullptr) return;
  FakeQp* qp = qp_of(*d, lqpn);
  if (qp == nullptr) return;
  release_binding(*d, *qp);
  std::erase_if(d->qps, [&](const FakeQp& q) { return q.lqpn == lqpn; });
}

void FakeNldev::exit_process(uint32_t pid) {
  for (auto& d : devices) {
    std::vector<uint32_t> gone;
    for (const auto& q : d.qps) {
      if (q.pid == pid) gone.push_back(q.lqpn);
    }
    for (uint32_t lqpn : gone) destroy_qp(d.index, lqpn);
  }
}

void FakeNldev::traffic(uint32_t dev_index, uint32_t lqpn, const std::string& counter,
                        uint64_t delta) {
  FakeDevice* d = device(dev_index);
  if (d == nullptr) return;
  const FakeQp* qp = qp_of(*d, lqpn);
  if (qp == nullptr) return;
  // The set counts only the counters the driver keeps per QP.
  FakeCounterSet* set = qp->counter_id ? set_of(*d, *qp->counter_id) : nullptr;
  if (set != nullptr) {
    for (auto& [name, value] : set->counters) {
      if (name != counter) continue;
      value += delta;
      if (d->counter_values_32bit) value &= 0xffffffffULL;
    }
  }
  // The port total counts the QP's traffic whichever counter it is bound to.
  FakePort* port = port_of(*d, qp->port);
  if (port == nullptr) return;
  auto it = std::find_if(port->counters.begin(), port->counters.end(),
                         [&](const auto& c) { return c.first == counter; });
  if (it == port->counters.end()) {
    port->counters.emplace_back(counter, delta);
  } else {
    it->second += delta;
  }
}

// --- replies -------------------------------------------------------------------

netlink::Reply FakeNldev::dump(uint16_t cmd, std::vector<Bytes> messages) {
  (void)cmd;
  if (interrupt_next_dumps > 0) {
    --interrupt_next_dumps;
    for (auto& m : messages) reinterpret_cast<nlmsghdr*>(m.data())->nlmsg_flags |= NLM_F_DUMP_INTR;
  }
  netlink::Reply reply;
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

// stat_get_doit_qp(): the port's counter mode. (Asking for one set by
// STAT_COUNTER_ID is not modelled.)
netlink::Reply FakeNldev::counter_mode_get(const Bytes& request) {
  const RequestAttrs attrs(request);
  if (attrs.u32(RDMA_NLDEV_ATTR_STAT_RES) != kResQp) return failure_reply(EINVAL, request);
  if (attrs.has(RDMA_NLDEV_ATTR_STAT_COUNTER_ID)) return failure_reply(EOPNOTSUPP, request);
  if (!attrs.has(RDMA_NLDEV_ATTR_STAT_MODE)) return failure_reply(EINVAL, request);
  const FakeDevice* dev = find(attrs.u32(RDMA_NLDEV_ATTR_DEV_INDEX));
  const auto port_index = attrs.u32(RDMA_NLDEV_ATTR_PORT_INDEX);
  if (dev == nullptr || !port_index) return failure_reply(EINVAL, request);
  const FakePort* port = port_of(*dev, *port_index);
  if (port == nullptr) return failure_reply(EINVAL, request);
  NlMessage m = device_message(*dev, RDMA_NLDEV_CMD_STAT_GET, 0);
  m.u32(RDMA_NLDEV_ATTR_PORT_INDEX, port->index).u32(RDMA_NLDEV_ATTR_STAT_MODE, port->counter_mode);
  if (port->counter_mode == RDMA_COUNTER_MODE_AUTO) {
    m.u32(RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK, port->auto_mask);
  }
  return answer(m);
}

// nldev_stat_get_dumpit() with STAT_RES = RES_QP: the device's counter sets,
// by id, optionally of one port.
netlink::Reply FakeNldev::counter_sets_dump(const Bytes& request) {
  const RequestAttrs attrs(request);
  if (attrs.u32(RDMA_NLDEV_ATTR_STAT_RES) != kResQp) return dump_failure(EINVAL);
  const FakeDevice* dev = find(attrs.u32(RDMA_NLDEV_ATTR_DEV_INDEX));
  if (dev == nullptr) return dump_failure(EINVAL);
  const auto port = attrs.u32(RDMA_NLDEV_ATTR_PORT_INDEX);
  if (attrs.has(RDMA_NLDEV_ATTR_PORT_INDEX) && (!port || port_of(*dev, *port) == nullptr)) {
    return dump_failure(EINVAL);
  }
  std::vector<const FakeCounterSet*> sets;
  for (const auto& s : dev->counter_sets) sets.push_back(&s);
  std::sort(sets.begin(), sets.end(), [](const auto* a, const auto* b) { return a->id < b->id; });
  return dump(RDMA_NLDEV_CMD_STAT_GET,
              paged_dump(*dev, RDMA_NLDEV_CMD_STAT_GET, RDMA_NLDEV_ATTR_STAT_COUNTER, sets, port,
                         sets_per_message, put_set));
}

// nldev_res_get_qp_dumpit(): the device's QPs by number, optionally of one port.
netlink::Reply FakeNldev::qp_dump(const Bytes& request) {
  const RequestAttrs attrs(request);
  const FakeDevice* dev = find(attrs.u32(RDMA_NLDEV_ATTR_DEV_INDEX));
  if (dev == nullptr) return dump_failure(EINVAL);
  const auto port = attrs.u32(RDMA_NLDEV_ATTR_PORT_INDEX);
  if (attrs.has(RDMA_NLDEV_ATTR_PORT_INDEX) && (!port || port_of(*dev, *port) == nullptr)) {
    return dump_failure(EINVAL);
  }
  std::vector<const FakeQp*> qps;
  for (const auto& q : dev->qps) {
    if (std::find(qps_missing_from_dump.begin(), qps_missing_from_dump.end(), q.lqpn) ==
        qps_missing_from_dump.end()) {
      qps.push_back(&q);
    }
  }
  std::sort(qps.begin(), qps.end(), [](const auto* a, const auto* b) { return a->lqpn < b->lqpn; });
  return dump(RDMA_NLDEV_CMD_RES_QP_GET,
              paged_dump(*dev, RDMA_NLDEV_CMD_RES_QP_GET, RDMA_NLDEV_ATTR_RES_QP, qps, port,
                         sets_per_message, put_qp));
}

// nldev_stat_set_doit(): auto mode on or off, or a manual bind.
netlink::Reply FakeNldev::stat_set(const Bytes& request) {
  if (!privileged) return failure_reply(EPERM, request);
  if (stat_set_error != 0) return failure_reply(stat_set_error, request);
  const RequestAttrs attrs(request);
  const auto dev_index = attrs.u32(RDMA_NLDEV_ATTR_DEV_INDEX);
  const auto port_index = attrs.u32(RDMA_NLDEV_ATTR_PORT_INDEX);
  FakeDevice* dev = dev_index ? device(*dev_index) : nullptr;
  if (dev == nullptr || !port_index) return failure_reply(EINVAL, request);
  FakePort* port = port_of(*dev, *port_index);
  if (port == nullptr) return failure_reply(EINVAL, request);
  const auto mode = attrs.u32(RDMA_NLDEV_ATTR_STAT_MODE);
  if (!mode) {
    if (attrs.has(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS)) {
      return set_optional_counters(*dev, *port, request);
    }
    return failure_reply(EINVAL, request);
  }
  if (attrs.u32(RDMA_NLDEV_ATTR_STAT_RES) != kResQp) return failure_reply(EINVAL, request);

  NlMessage m = device_message(*dev, RDMA_NLDEV_CMD_STAT_SET, 0);
  m.u32(RDMA_NLDEV_ATTR_PORT_INDEX, port->index);
  if (*mode == RDMA_COUNTER_MODE_AUTO) {
    const int err =
        set_auto_mode(*dev, *port, attrs.u32(RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK).value_or(0));
    if (err != 0) return failure_reply(err, request, err == EBUSY ? kAutoModeBusy : "");
    return answer(m);
  }
  // Any other mode asks for a manual bind.
  const auto lqpn = attrs.u32(RDMA_NLDEV_ATTR_RES_LQPN);
  if (!lqpn) return failure_reply(EINVAL, request);
  uint32_t counter_id = 0;
  int err = 0;
  if (const auto wanted = attrs.u32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID)) {
    counter_id = *wanted;
    err = bind_existing(*dev, *port, *lqpn, counter_id);
  } else {
    err = bind_new(*dev, *port, *lqpn, counter_id);
  }
  if (err != 0) return failure_reply(err, request);
  m.u32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID, counter_id).u32(RDMA_NLDEV_ATTR_RES_LQPN, *lqpn);
  return answer(m);
}

// nldev_stat_get_counter_status_doit(): every hw counter of the port with its
// index; optional ones carry STAT_HWCOUNTER_DYNAMIC = enabled. EINVAL for an
// unknown device or port, or a driver without port counters.
netlink::Reply FakeNldev::counter_status_get(const Bytes& request) {
  const RequestAttrs attrs(request);
  const FakeDevice* dev = find(attrs.u32(RDMA_NLDEV_ATTR_DEV_INDEX));
  const auto port_index = attrs.u32(RDMA_NLDEV_ATTR_PORT_INDEX);
  if (dev == nullptr || !port_index) return failure_reply(EINVAL, request);
  const FakePort* port = port_of(*dev, *port_index);
  if (port == nullptr) return failure_reply(EINVAL, request);
  if (port->status_error != 0) return failure_reply(port->status_error, request);
  if (port->stat_error != 0) return failure_reply(EINVAL, request);
  NlMessage m = device_message(*dev, RDMA_NLDEV_CMD_STAT_GET_STATUS, 0);
  m.u32(RDMA_NLDEV_ATTR_PORT_INDEX, port->index);
  m.begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
  uint32_t index = 0;
  for (const auto& c : port->counters) {
    m.begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)
        .str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, c.first)
        .u32(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX, index++)
        .end_nest();
  }
  for (const auto& c : port->optional_counters) {
    m.begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)
        .str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, c.name)
        .u32(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX, index++)
        .u8(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_DYNAMIC, c.enabled ? 1 : 0)
        .end_nest();
  }
  m.end_nest();
  return answer(m);
}

// nldev_stat_set_counter_dynamic_doit(): the table's indices become the
// whole enabled set. EINVAL for an index past the table or of a counter that
// is not optional (nothing changes then); an empty table disables all.
netlink::Reply FakeNldev::set_optional_counters(FakeDevice& dev, FakePort& port,
                                                const Bytes& request) {
  if (port.stat_error != 0) return failure_reply(EINVAL, request);
  const nlattr* table = RequestAttrs(request).get(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
  const std::size_t fixed = port.counters.size();
  std::vector<bool> wanted(port.optional_counters.size(), false);
  const auto* a = static_cast<const nlattr*>(mnl_attr_get_payload(table));
  auto len = static_cast<int>(mnl_attr_get_payload_len(table));
  while (mnl_attr_ok(a, len)) {
    if (mnl_attr_validate(a, MNL_TYPE_U32) < 0) return failure_reply(EINVAL, request);
    const uint32_t index = mnl_attr_get_u32(a);
    if (index < fixed || index >= fixed + wanted.size()) return failure_reply(EINVAL, request);
    wanted[index - fixed] = true;
    len -= static_cast<int>(MNL_ALIGN(a->nla_len));
    a = mnl_attr_next(a);
  }
  for (std::size_t i = 0; i < wanted.size(); ++i) port.optional_counters[i].enabled = wanted[i];
  NlMessage m = device_message(dev, RDMA_NLDEV_CMD_STAT_SET, 0);
  m.u32(RDMA_NLDEV_ATTR_PORT_INDEX, port.index);
  return answer(m);
}

// nldev_stat_del_doit(): unbind one QP. The answer is a STAT_SET message.
netlink::Reply FakeNldev::stat_del(const Bytes& request) {
  if (!privileged) return failure_reply(EPERM, request);
  if (stat_set_error != 0) return failure_reply(stat_set_error, request);
  const RequestAttrs attrs(request);
  const auto dev_index = attrs.u32(RDMA_NLDEV_ATTR_DEV_INDEX);
  const auto port_index = attrs.u32(RDMA_NLDEV_ATTR_PORT_INDEX);
  const auto counter_id = attrs.u32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID);
  const auto lqpn = attrs.u32(RDMA_NLDEV_ATTR_RES_LQPN);
  if (!dev_index || !port_index || !counter_id || !lqpn ||
      attrs.u32(RDMA_NLDEV_ATTR_STAT_RES) != kResQp) {
    return failure_reply(EINVAL, request);
  }
  FakeDevice* dev = device(*dev_index);
  if (dev == nullptr) return failure_reply(EINVAL, request);
  FakePort* port = port_of(*dev, *port_index);
  if (port == nullptr) return failure_reply(EINVAL, request);
  if (const int err = unbind(*dev, *port, *lqpn, *counter_id); err != 0) {
    return failure_reply(err, request);
  }
  NlMessage m = device_message(*dev, RDMA_NLDEV_CMD_STAT_SET, 0);
  m.u32(RDMA_NLDEV_ATTR_PORT_INDEX, port->index)
      .u32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID, *counter_id)
      .u32(RDMA_NLDEV_ATTR_RES_LQPN, *lqpn);
  return answer(m);
}

Result<netlink::Reply> FakeNldev::exchange(std::span<const uint8_t> request) {
  if (absent) return Error::system(EPROTONOSUPPORT, "open NETLINK_RDMA socket");
  const SeenRequest req = decode_request(request);
  requests.push_back(req);
  const Bytes original(request.begin(), request.end());
  const bool is_dump = (req.flags & NLM_F_DUMP) != 0;
  netlink::Reply reply;
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
      if (dev->port_list_error != 0) {
        reply.datagrams.push_back(error_message(-dev->port_list_error, "", 0, original));
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
      if (is_dump) {
        reply = counter_sets_dump(original);
        break;
      }
      if (RequestAttrs(original).has(RDMA_NLDEV_ATTR_STAT_RES)) {
        reply = counter_mode_get(original);
        break;
      }
      // Without STAT_RES: the port's default counters.
      const FakePort* port = nullptr;
      if (dev != nullptr && req.port) port = port_of(*dev, *req.port);
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
      // Disabled optional counters are skipped (stats->is_disabled).
      for (const auto& c : port->optional_counters) {
        if (!c.enabled) continue;
        m.begin_nest(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)
            .str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, c.name)
            .u64(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, c.value)
            .end_nest();
      }
      m.end_nest();
      reply = answer(m);
      break;
    }
    case RDMA_NLDEV_CMD_STAT_GET_STATUS:
      reply = counter_status_get(original);
      break;
    case RDMA_NLDEV_CMD_STAT_SET:
      reply = stat_set(original);
      break;
    case RDMA_NLDEV_CMD_STAT_DEL:
      reply = stat_del(original);
      break;
    case RDMA_NLDEV_CMD_RES_QP_GET:
      // Asking for one QP (a doit) is not modelled.
      reply = is_dump ? qp_dump(original) : failure_reply(EOPNOTSUPP, original);
      break;
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
