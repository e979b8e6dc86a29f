#include "exporter/probe/verbs/endpoint.hpp"

#include <fcntl.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <random>

#include "exporter/probe/verbs/error.hpp"

namespace rdma_exporter::probe {
namespace {

constexpr uint32_t kMaxInline = 64;

uint32_t random_psn() {
  static thread_local std::mt19937 gen{std::random_device{}()};
  return gen() & 0xffffff;
}

}  // namespace

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
  ep->access_ = access_for(config.op, config.role);
  if (ep->access_.own_domain) {
    auto domain = Domain::create(dev);
    if (!domain) return domain.error();
    ep->domain_ = std::move(domain.value());
  }
  ibv_pd* const pd = ep->domain_ ? ep->domain_->pd() : dev.pd();
  ibv_pd* const resource_pd = ep->domain_ ? ep->domain_->resource_pd() : dev.resource_pd();
  const bool thread_domain = ep->domain_ ? ep->domain_->thread_domain() : dev.thread_domain();

  auto memory = Memory::create(dev, config.size, config.memory, ep->access_.memory, pd);
  if (!memory) return memory.error();
  ep->memory_ = std::move(memory.value());

  ep->channel_ = ibv_create_comp_channel(ctx);
  if (ep->channel_ == nullptr) return verbs_error(errno, dev.name() + ": completion channel");
  const int flags = ::fcntl(ep->channel_->fd, F_GETFL);
  if (flags < 0 || ::fcntl(ep->channel_->fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return Error::system(errno, "completion channel: O_NONBLOCK");
  }

  const int cqe = static_cast<int>(config.recv_depth) + 16;
  if (dev.completion_timestamps() || thread_domain) {
    ibv_cq_init_attr_ex attr{};
    attr.cqe = static_cast<uint32_t>(cqe);
    attr.channel = ep->channel_;
    if (dev.completion_timestamps()) attr.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
    if (thread_domain) {
      attr.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
      attr.parent_domain = resource_pd;
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
  const OpRow* row = find_op(config.op);
  init.cap.max_inline_data =
      row != nullptr && row->inline_data ? std::min(config.size, kMaxInline) : 0;
  ep->qp_ = ibv_create_qp(resource_pd, &init);
  if (ep->qp_ == nullptr && init.cap.max_inline_data > 0) {
    init.cap.max_inline_data = 0;
    ep->qp_ = ibv_create_qp(resource_pd, &init);
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
  if (remotely_accessible(access_.memory)) {
    p.rkey = memory_->rkey();
    p.addr = memory_->address();
  }
  return p;
}

Status Endpoint::connect(const wire::Peer& remote) {
  const std::string where = device_->name() + " QP " + std::to_string(qp_->qp_num);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = config_.port.port;
  a.qp_access_flags = static_cast<unsigned>(access_.queue_pair);
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
  const OpRow* row = find_op(op);
  if (row == nullptr || row->transport != Transport::rc) {
    return Error{EINVAL, "posting an RDMA " + std::string(op_name(op)) + ": not an RC operation"};
  }
  wr.opcode = row->opcode;
  if (row->remote_memory) {
    wr.wr.rdma.remote_addr = remote.addr;
    wr.wr.rdma.rkey = remote.rkey;
  }
  if (row->inline_data && config_.size <= max_inline_) wr.send_flags |= IBV_SEND_INLINE;
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

std::optional<uint64_t> Endpoint::clock_now() const {
  if (cq_ex_ == nullptr) return std::nullopt;
  return device_->raw_clock();
}

void Endpoint::consume_events() {
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  while (ibv_get_cq_event(channel_, &cq, &ctx) == 0) ibv_ack_cq_events(cq, 1);
}

}  // namespace rdma_exporter::probe
