#include "exporter/probe/ud/ud_queue_pair.hpp"

#include "exporter/probe/verbs/access.hpp"
#include "exporter/probe/verbs/error.hpp"

namespace rdma_exporter::probe {
namespace {

// Send work requests carry this bit; receives carry their slot number.
constexpr uint64_t kSendTag = 1ull << 62;

}  // namespace

UdQueuePair::~UdQueuePair() {
  if (qp_) ibv_destroy_qp(qp_);
}

Result<std::unique_ptr<UdQueuePair>> UdQueuePair::create(const Device& device,
                                                         const UdQueuePairConfig& config) {
  std::unique_ptr<UdQueuePair> q(new UdQueuePair(config));
  auto memory = Memory::create(device, q->slots_.size(), config.memory,
                               access_for(Op::ud, Role::responder).memory);
  if (!memory) return memory.error();
  q->memory_ = std::move(memory.value());

  auto completions = CompletionQueue::create(
      device, CompletionQueueConfig{
                  .depth = config.recv_depth + config.send_depth,
                  .datagrams = true,
                  .parent_domain = device.thread_domain() ? device.resource_pd() : nullptr,
                  .where = config.where});
  if (!completions) return completions.error();
  q->completions_ = std::move(completions.value());

  ibv_qp_init_attr init{};
  init.send_cq = q->completions_->cq();
  init.recv_cq = q->completions_->cq();
  init.qp_type = IBV_QPT_UD;
  init.sq_sig_all = 1;
  init.cap.max_send_wr = config.send_depth;
  init.cap.max_recv_wr = config.recv_depth;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  q->qp_ = ibv_create_qp(device.resource_pd(), &init);
  if (q->qp_ == nullptr) return verbs_error(errno, config.where + ": creating");
  if (Status s = q->to_ready_to_send(config.port, config.qkey); !s) return s.error();
  return q;
}

// INIT with the port and Q_Key, every receive slot posted, RTR, RTS.
Status UdQueuePair::to_ready_to_send(const PortInfo& port, uint32_t qkey) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = port.port;
  a.qkey = qkey;
  if (int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
      rc != 0) {
    return verbs_error(rc, where_ + ": to INIT");
  }
  for (uint32_t i = 0; i < slots_.recv_depth(); ++i) {
    if (Status s = post_recv(i); !s) return s;
  }
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  if (int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE); rc != 0) {
    return verbs_error(rc, where_ + ": to RTR");
  }
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0;
  if (int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_SQ_PSN); rc != 0) {
    return verbs_error(rc, where_ + ": to RTS");
  }
  return ok_status();
}

std::span<const uint8_t> UdQueuePair::received(uint32_t slot) const {
  return {memory_->data() + slots_.recv_offset(slot), slots_.recv_slot_size()};
}

std::span<uint8_t> UdQueuePair::send_buffer(uint32_t slot) {
  return {memory_->data() + slots_.send_offset(slot), slots_.max_size()};
}

Status UdQueuePair::post_recv(uint32_t slot) {
  ibv_sge sge{};
  sge.addr = memory_->address() + slots_.recv_offset(slot);
  sge.length = static_cast<uint32_t>(slots_.recv_slot_size());
  sge.lkey = memory_->lkey();
  ibv_recv_wr wr{};
  wr.wr_id = slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_recv(qp_, &wr, &bad); rc != 0) {
    return verbs_error(rc, where_ + ": posting a receive");
  }
  return ok_status();
}

Status UdQueuePair::post_send(uint32_t slot, uint32_t size, ibv_ah* ah, uint32_t qpn,
                              uint32_t qkey) {
  ibv_sge sge{};
  sge.addr = memory_->address() + slots_.send_offset(slot);
  sge.length = size;
  sge.lkey = memory_->lkey();
  ibv_send_wr wr{};
  wr.wr_id = kSendTag | slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = qpn;
  wr.wr.ud.remote_qkey = qkey;
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(qp_, &wr, &bad); rc != 0) {
    return verbs_error(rc, where_ + ": posting a send");
  }
  return ok_status();
}

std::optional<uint32_t> UdQueuePair::send_slot(uint64_t wr_id) {
  if ((wr_id & kSendTag) == 0) return std::nullopt;
  return static_cast<uint32_t>(wr_id & ~kSendTag);
}

}  // namespace rdma_exporter::probe
