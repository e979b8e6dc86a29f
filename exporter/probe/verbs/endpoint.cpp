#include "exporter/probe/verbs/endpoint.hpp"

#include <algorithm>
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
}

Result<std::unique_ptr<Endpoint>> Endpoint::create(std::shared_ptr<Device> device,
                                                   const EndpointConfig& config) {
  std::unique_ptr<Endpoint> ep(new Endpoint());
  ep->device_ = std::move(device);
  ep->config_ = config;
  const Device& dev = *ep->device_;
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

  auto completions = CompletionQueue::create(
      dev, CompletionQueueConfig{.depth = config.recv_depth + 16,
                                 .parent_domain = thread_domain ? resource_pd : nullptr,
                                 .where = dev.name() + ": RC queue pair"});
  if (!completions) return completions.error();
  ep->completions_ = std::move(completions.value());

  ibv_qp_init_attr init{};
  init.send_cq = ep->completions_->cq();
  init.recv_cq = ep->completions_->cq();
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
  return completions_->poll(out);
}

Status Endpoint::arm() {
  return completions_->arm();
}

std::optional<uint64_t> Endpoint::clock_now() const {
  if (!completions_->timestamps()) return std::nullopt;
  return device_->raw_clock();
}

void Endpoint::consume_events() {
  completions_->consume_events();
}

}  // namespace rdma_exporter::probe
