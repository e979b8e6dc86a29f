#include "collectors/probe/verbs.hpp"

#include <fcntl.h>
#include <linux/udmabuf.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace rdma_exporter::probe {
namespace {

constexpr std::size_t kPage = 4096;
constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
constexpr uint32_t kMaxInline = 64;

std::size_t round_to_page(std::size_t n) {
  return (n + kPage - 1) / kPage * kPage;
}

Error verbs_error(int err, const std::string& what) {
  // libibverbs returns the error number itself or sets errno.
  return Error::system(err != 0 ? err : EIO, what);
}

bool ipv4_mapped(const uint8_t* raw) {
  for (int i = 0; i < 10; ++i) {
    if (raw[i] != 0) return false;
  }
  return raw[10] == 0xff && raw[11] == 0xff;
}

bool has_active_port(ibv_context* ctx) {
  ibv_device_attr attr{};
  if (ibv_query_device(ctx, &attr) != 0) return false;
  for (uint8_t p = 1; p <= attr.phys_port_cnt; ++p) {
    ibv_port_attr pa{};
    if (ibv_query_port(ctx, p, &pa) == 0 && pa.state == IBV_PORT_ACTIVE) return true;
  }
  return false;
}

uint32_t random_psn() {
  static thread_local std::mt19937 gen{std::random_device{}()};
  return gen() & 0xffffff;
}

}  // namespace

ibv_mtu mtu_enum(uint32_t bytes) {
  switch (bytes) {
    case 256:
      return IBV_MTU_256;
    case 512:
      return IBV_MTU_512;
    case 2048:
      return IBV_MTU_2048;
    case 4096:
      return IBV_MTU_4096;
    default:
      return IBV_MTU_1024;
  }
}

uint32_t mtu_bytes(ibv_mtu mtu) {
  return 128u << static_cast<unsigned>(mtu);
}

double ticks_to_seconds(uint64_t ticks, uint64_t core_clock_khz) {
  if (core_clock_khz == 0) return 0;
  return static_cast<double>(ticks) / (static_cast<double>(core_clock_khz) * 1000.0);
}

// ---- Device ----

Device::~Device() {
  if (parent_) ibv_dealloc_pd(parent_);
  if (td_) ibv_dealloc_td(td_);
  if (pd_) ibv_dealloc_pd(pd_);
  if (ctx_) ibv_close_device(ctx_);
}

Result<std::shared_ptr<Device>> Device::open(const std::string& name) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) return verbs_error(errno, "listing RDMA devices");
  std::shared_ptr<Device> dev(new Device());
  for (int i = 0; i < n && dev->ctx_ == nullptr; ++i) {
    const std::string this_name = ibv_get_device_name(list[i]);
    if (!name.empty() && this_name != name) continue;
    ibv_context* ctx = ibv_open_device(list[i]);
    if (ctx == nullptr) {
      if (!name.empty()) {
        const int err = errno;
        ibv_free_device_list(list);
        return verbs_error(err, "opening RDMA device " + name);
      }
      continue;
    }
    if (name.empty() && !has_active_port(ctx)) {
      ibv_close_device(ctx);
      continue;
    }
    dev->ctx_ = ctx;
    dev->name_ = this_name;
  }
  ibv_free_device_list(list);
  if (dev->ctx_ == nullptr) {
    return Error{ENODEV, name.empty() ? std::string("no RDMA device with an active port")
                                      : "no RDMA device named " + name};
  }
  dev->pd_ = ibv_alloc_pd(dev->ctx_);
  if (dev->pd_ == nullptr) return verbs_error(errno, dev->name_ + ": allocating a PD");

  ibv_td_init_attr td_attr{};
  dev->td_ = ibv_alloc_td(dev->ctx_, &td_attr);
  if (dev->td_ != nullptr) {
    ibv_parent_domain_init_attr pd_attr{};
    pd_attr.pd = dev->pd_;
    pd_attr.td = dev->td_;
    dev->parent_ = ibv_alloc_parent_domain(dev->ctx_, &pd_attr);
    if (dev->parent_ == nullptr) {
      ibv_dealloc_td(dev->td_);
      dev->td_ = nullptr;
    }
  }

  ibv_device_attr_ex attr{};
  if (ibv_query_device_ex(dev->ctx_, nullptr, &attr) == 0 && attr.completion_timestamp_mask != 0 &&
      attr.hca_core_clock != 0) {
    dev->core_clock_khz_ = attr.hca_core_clock;
    if (!dev->raw_clock()) dev->core_clock_khz_ = 0;
  }
  return dev;
}

std::optional<uint64_t> Device::raw_clock() const {
  ibv_values_ex v{};
  v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
  if (ibv_query_rt_values_ex(ctx_, &v) != 0 || (v.comp_mask & IBV_VALUES_MASK_RAW_CLOCK) == 0) {
    return std::nullopt;
  }
  return static_cast<uint64_t>(v.raw_clock.tv_sec) * 1000000000ull +
         static_cast<uint64_t>(v.raw_clock.tv_nsec);
}

Result<PortInfo> Device::port(uint8_t port, int gid_index) const {
  const std::string where = name_ + " port " + std::to_string(port);
  ibv_port_attr pa{};
  if (int rc = ibv_query_port(ctx_, port, &pa); rc != 0)
    return verbs_error(rc, "querying " + where);
  PortInfo info;
  info.port = port;
  info.lid = pa.lid;
  info.ethernet = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
  info.active_mtu = mtu_bytes(pa.active_mtu);
  if (gid_index < 0 && info.ethernet) {
    ibv_device_attr dattr{};
    if (int rc = ibv_query_device(ctx_, &dattr); rc != 0)
      return verbs_error(rc, "querying " + name_);
    std::size_t total = 0;
    for (uint8_t p = 1; p <= dattr.phys_port_cnt; ++p) {
      ibv_port_attr a{};
      if (ibv_query_port(ctx_, p, &a) == 0) total += static_cast<std::size_t>(a.gid_tbl_len);
    }
    std::vector<ibv_gid_entry> entries(std::max<std::size_t>(total, 1));
    const ssize_t got = ibv_query_gid_table(ctx_, entries.data(), entries.size(), 0);
    if (got < 0) return verbs_error(static_cast<int>(-got), "reading the GID table of " + name_);
    for (ssize_t i = 0; i < got; ++i) {
      const auto& e = entries[static_cast<std::size_t>(i)];
      if (e.port_num == port && e.gid_type == IBV_GID_TYPE_ROCE_V2 && ipv4_mapped(e.gid.raw)) {
        info.gid_index = static_cast<int>(e.gid_index);
        std::memcpy(info.gid.data(), e.gid.raw, 16);
        return info;
      }
    }
    return Error{ENOENT, where + " has no RoCEv2 IPv4 GID (set the probe class's gid_index)"};
  }
  info.gid_index = gid_index < 0 ? 0 : gid_index;
  ibv_gid gid{};
  if (int rc = ibv_query_gid(ctx_, port, info.gid_index, &gid); rc != 0) {
    return verbs_error(rc, "reading GID " + std::to_string(info.gid_index) + " of " + where);
  }
  std::memcpy(info.gid.data(), gid.raw, 16);
  if (info.ethernet &&
      std::all_of(info.gid.begin(), info.gid.end(), [](uint8_t b) { return !b; })) {
    return Error{ENOENT, where + ": GID " + std::to_string(info.gid_index) + " is empty"};
  }
  return info;
}

// ---- Memory ----

Memory::~Memory() {
  if (mr_) ibv_dereg_mr(mr_);
  if (dmabuf_fd_ >= 0) ::close(dmabuf_fd_);
  if (mapped_) {
    ::munmap(data_, size_);
  } else {
    std::free(data_);  // NOLINT(cppcoreguidelines-no-malloc)
  }
  if (memfd_ >= 0) ::close(memfd_);
}

Result<std::unique_ptr<Memory>> Memory::create(const Device& device, std::size_t size,
                                               const std::string& kind) {
  std::unique_ptr<Memory> m(new Memory());
  m->size_ = round_to_page(std::max<std::size_t>(size, 64));
  if (kind == "udmabuf") {
    m->memfd_ = ::memfd_create("rdma_exporter_probe", MFD_ALLOW_SEALING | MFD_CLOEXEC);
    if (m->memfd_ < 0) return Error::system(errno, "probe memory: memfd_create");
    if (::ftruncate(m->memfd_, static_cast<off_t>(m->size_)) != 0 ||
        ::fcntl(m->memfd_, F_ADD_SEALS, F_SEAL_SHRINK) != 0) {
      return Error::system(errno, "probe memory: sizing the memfd");
    }
    const int dev = ::open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
    if (dev < 0) return Error::system(errno, "probe memory: opening /dev/udmabuf");
    udmabuf_create create{};
    create.memfd = static_cast<uint32_t>(m->memfd_);
    create.flags = UDMABUF_FLAGS_CLOEXEC;
    create.size = m->size_;
    m->dmabuf_fd_ = ::ioctl(dev, UDMABUF_CREATE, &create);
    const int err = errno;
    ::close(dev);
    if (m->dmabuf_fd_ < 0) return Error::system(err, "probe memory: UDMABUF_CREATE");
    void* p = ::mmap(nullptr, m->size_, PROT_READ | PROT_WRITE, MAP_SHARED, m->memfd_, 0);
    if (p == MAP_FAILED) return Error::system(errno, "probe memory: mapping the memfd");
    m->data_ = static_cast<uint8_t*>(p);
    m->mapped_ = true;
    m->mr_ = ibv_reg_dmabuf_mr(device.pd(), 0, m->size_, m->address(), m->dmabuf_fd_, kAccess);
    if (m->mr_ == nullptr) {
      return verbs_error(errno, device.name() + ": registering dma-buf memory (ibv_reg_dmabuf_mr)");
    }
    return m;
  }
  m->data_ = static_cast<uint8_t*>(std::aligned_alloc(kPage, m->size_));  // NOLINT
  if (m->data_ == nullptr) return Error{ENOMEM, "probe memory: allocating " + std::to_string(size)};
  std::memset(m->data_, 0, m->size_);
  m->mr_ = ibv_reg_mr(device.pd(), m->data_, m->size_, kAccess);
  if (m->mr_ == nullptr) return verbs_error(errno, device.name() + ": registering probe memory");
  return m;
}

// ---- Endpoint ----

Endpoint::~Endpoint() {
  if (qp_) ibv_destroy_qp(qp_);
  if (cq_) ibv_destroy_cq(cq_);
  if (channel_) ibv_destroy_comp_channel(channel_);
}

Result<std::unique_ptr<Endpoint>> Endpoint::create(std::shared_ptr<Device> device,
                                                   const EndpointConfig& config) {
  std::unique_ptr<Endpoint> ep(new Endpoint());
  ep->device_ = std::move(device);
  ep->config_ = config;
  const Device& dev = *ep->device_;
  ibv_context* ctx = dev.context();

  auto memory = Memory::create(dev, config.size, config.memory);
  if (!memory) return memory.error();
  ep->memory_ = std::move(memory.value());

  ep->channel_ = ibv_create_comp_channel(ctx);
  if (ep->channel_ == nullptr) return verbs_error(errno, dev.name() + ": completion channel");
  const int flags = ::fcntl(ep->channel_->fd, F_GETFL);
  if (flags < 0 || ::fcntl(ep->channel_->fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return Error::system(errno, "completion channel: O_NONBLOCK");
  }

  const int cqe = static_cast<int>(config.recv_depth) + 16;
  if (dev.completion_timestamps() || dev.thread_domain()) {
    ibv_cq_init_attr_ex attr{};
    attr.cqe = static_cast<uint32_t>(cqe);
    attr.channel = ep->channel_;
    if (dev.completion_timestamps()) attr.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
    if (dev.thread_domain()) {
      attr.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
      attr.parent_domain = dev.resource_pd();
    }
    if (ibv_cq_ex* cq = ibv_create_cq_ex(ctx, &attr); cq != nullptr) {
      ep->cq_ = ibv_cq_ex_to_cq(cq);
      if (dev.completion_timestamps()) ep->cq_ex_ = cq;
    }
  }
  if (ep->cq_ == nullptr) {
    ep->cq_ = ibv_create_cq(ctx, cqe, nullptr, ep->channel_, 0);
    if (ep->cq_ == nullptr) return verbs_error(errno, dev.name() + ": creating a CQ");
  }

  ibv_qp_init_attr init{};
  init.send_cq = ep->cq_;
  init.recv_cq = ep->cq_;
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = 1;
  init.cap.max_send_wr = 8;
  init.cap.max_recv_wr = std::max<uint32_t>(config.recv_depth, 1);
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = config.op == Op::read ? 0 : std::min(config.size, kMaxInline);
  ep->qp_ = ibv_create_qp(dev.resource_pd(), &init);
  if (ep->qp_ == nullptr && init.cap.max_inline_data > 0) {
    init.cap.max_inline_data = 0;
    ep->qp_ = ibv_create_qp(dev.resource_pd(), &init);
  }
  if (ep->qp_ == nullptr) return verbs_error(errno, dev.name() + ": creating an RC QP");
  ep->max_inline_ = init.cap.max_inline_data;
  ep->psn_ = random_psn();
  return ep;
}

wire::Peer Endpoint::local() const {
  wire::Peer p;
  p.qpn = qp_->qp_num;
  p.psn = psn_;
  p.lid = config_.port.lid;
  p.gid = config_.port.gid;
  p.rkey = memory_->rkey();
  p.addr = memory_->address();
  return p;
}

Status Endpoint::connect(const wire::Peer& remote) {
  const std::string where = device_->name() + " QP " + std::to_string(qp_->qp_num);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = config_.port.port;
  a.qp_access_flags = kAccess;
  if (int rc = ibv_modify_qp(qp_, &a,
                             IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
      rc != 0) {
    return verbs_error(rc, where + ": to INIT");
  }
  for (uint32_t i = 0; i < config_.recv_depth; ++i) {
    if (Status s = post_recv(kRecvTag | i); !s) return s;
  }

  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = mtu_enum(std::min(config_.mtu, config_.port.active_mtu));
  a.dest_qp_num = remote.qpn;
  a.rq_psn = remote.psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.dlid = remote.lid;
  a.ah_attr.sl = config_.sl;
  a.ah_attr.port_num = config_.port.port;
  const bool remote_gid =
      std::any_of(remote.gid.begin(), remote.gid.end(), [](uint8_t b) { return b; });
  if (config_.port.ethernet || remote_gid) {
    a.ah_attr.is_global = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, remote.gid.data(), 16);
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(config_.port.gid_index);
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.grh.traffic_class = config_.tclass;
  }
  if (int rc = ibv_modify_qp(qp_, &a,
                             IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
      rc != 0) {
    return verbs_error(rc, where + ": to RTR");
  }

  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = psn_;
  a.max_rd_atomic = 1;
  if (int rc = ibv_modify_qp(qp_, &a,
                             IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
      rc != 0) {
    return verbs_error(rc, where + ": to RTS");
  }
  return ok_status();
}

ibv_sge Endpoint::buffer() const {
  ibv_sge sge{};
  sge.addr = memory_->address();
  sge.length = config_.size;
  sge.lkey = memory_->lkey();
  return sge;
}

Status Endpoint::post_recv(uint64_t wr_id) {
  ibv_sge sge = buffer();
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_recv(qp_, &wr, &bad); rc != 0) return verbs_error(rc, "posting a receive");
  return ok_status();
}

Status Endpoint::post_send(uint64_t wr_id) {
  return post_as(Op::send, wr_id, wire::Peer{});
}

Status Endpoint::post(uint64_t wr_id, const wire::Peer& remote) {
  return post_as(config_.op, wr_id, remote);
}

Status Endpoint::post_as(Op op, uint64_t wr_id, const wire::Peer& remote) {
  ibv_sge sge = buffer();
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  switch (op) {
    case Op::send:
      wr.opcode = IBV_WR_SEND;
      break;
    case Op::write:
      wr.opcode = IBV_WR_RDMA_WRITE;
      break;
    case Op::read:
      wr.opcode = IBV_WR_RDMA_READ;
      break;
  }
  if (op != Op::send) {
    wr.wr.rdma.remote_addr = remote.addr;
    wr.wr.rdma.rkey = remote.rkey;
  }
  if (op != Op::read && config_.size <= max_inline_) wr.send_flags |= IBV_SEND_INLINE;
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(qp_, &wr, &bad); rc != 0) {
    return verbs_error(rc, std::string("posting an RDMA ") + op_name(op));
  }
  return ok_status();
}

Result<std::size_t> Endpoint::poll(std::span<Completion> out) {
  if (out.empty()) return std::size_t{0};
  if (cq_ex_ != nullptr) {
    ibv_poll_cq_attr attr{};
    const int rc = ibv_start_poll(cq_ex_, &attr);
    if (rc == ENOENT) return std::size_t{0};
    if (rc != 0) return verbs_error(rc, "polling the CQ");
    std::size_t n = 0;
    for (;;) {
      Completion& c = out[n++];
      c.wr_id = cq_ex_->wr_id;
      c.status = cq_ex_->status;
      c.opcode = c.status == IBV_WC_SUCCESS ? ibv_wc_read_opcode(cq_ex_) : IBV_WC_SEND;
      c.timestamp = ibv_wc_read_completion_ts(cq_ex_);
      if (n == out.size() || ibv_next_poll(cq_ex_) != 0) break;
    }
    ibv_end_poll(cq_ex_);
    return n;
  }
  std::array<ibv_wc, 16> wc{};
  const int want = static_cast<int>(std::min(out.size(), wc.size()));
  const int got = ibv_poll_cq(cq_, want, wc.data());
  if (got < 0) return verbs_error(-got, "polling the CQ");
  for (int i = 0; i < got; ++i) {
    Completion& c = out[static_cast<std::size_t>(i)];
    c.wr_id = wc[static_cast<std::size_t>(i)].wr_id;
    c.status = wc[static_cast<std::size_t>(i)].status;
    c.opcode = wc[static_cast<std::size_t>(i)].opcode;
    c.timestamp.reset();
  }
  return static_cast<std::size_t>(got);
}

Status Endpoint::arm() {
  if (int rc = ibv_req_notify_cq(cq_, 0); rc != 0) return verbs_error(rc, "arming the CQ");
  return ok_status();
}

void Endpoint::consume_events() {
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  while (ibv_get_cq_event(channel_, &cq, &ctx) == 0) ibv_ack_cq_events(cq, 1);
}

}  // namespace rdma_exporter::probe
