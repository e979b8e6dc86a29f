#include "exporter/probe/verbs/completion_queue.hpp"

#include <fcntl.h>

#include <algorithm>
#include <array>

#include "exporter/probe/verbs/error.hpp"

namespace rdma_exporter::probe {
namespace {

// Completions one plain poll takes at most (its array is on the stack).
constexpr std::size_t kPlainBatch = 32;

Status make_non_blocking(int fd, const std::string& where) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return Error::system(errno, where + ": completion channel: O_NONBLOCK");
  }
  return ok_status();
}

}  // namespace

CompletionQueue::~CompletionQueue() {
  if (cq_) ibv_destroy_cq(cq_);
  if (channel_) ibv_destroy_comp_channel(channel_);
}

Result<std::unique_ptr<CompletionQueue>> CompletionQueue::create(
    const Device& device, const CompletionQueueConfig& config) {
  std::unique_ptr<CompletionQueue> q(new CompletionQueue());
  ibv_context* ctx = device.context();
  q->datagrams_ = config.datagrams;
  q->channel_ = ibv_create_comp_channel(ctx);
  if (q->channel_ == nullptr) return verbs_error(errno, config.where + ": completion channel");
  if (Status s = make_non_blocking(q->channel_->fd, config.where); !s) return s.error();

  const bool timestamps = device.completion_timestamps();
  if (timestamps || config.parent_domain != nullptr) {
    ibv_cq_init_attr_ex attr{};
    attr.cqe = config.depth;
    attr.channel = q->channel_;
    if (config.datagrams) {
      attr.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID;
    }
    if (timestamps) attr.wc_flags |= IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
    if (config.parent_domain != nullptr) {
      attr.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
      attr.parent_domain = config.parent_domain;
    }
    // A device without extended queues, or without one of the fields,
    // gets the plain queue below: no timestamps, no thread domain.
    if (ibv_cq_ex* cq = ibv_create_cq_ex(ctx, &attr); cq != nullptr) {
      q->cq_ex_ = cq;
      q->cq_ = ibv_cq_ex_to_cq(cq);
      q->timestamps_ = timestamps;
    }
  }
  if (q->cq_ == nullptr) {
    q->cq_ = ibv_create_cq(ctx, static_cast<int>(config.depth), nullptr, q->channel_, 0);
    if (q->cq_ == nullptr) return verbs_error(errno, config.where + ": creating a CQ");
  }
  return q;
}

Result<std::size_t> CompletionQueue::poll(std::span<Completion> out) {
  if (out.empty()) return std::size_t{0};
  return cq_ex_ != nullptr ? poll_extended(out) : poll_plain(out);
}

Result<std::size_t> CompletionQueue::poll_extended(std::span<Completion> out) {
  ibv_poll_cq_attr attr{};
  const int rc = ibv_start_poll(cq_ex_, &attr);
  if (rc == ENOENT) return std::size_t{0};
  if (rc != 0) return verbs_error(rc, "polling the CQ");
  std::size_t n = 0;
  for (;;) {
    Completion& c = out[n++];
    c = Completion{};
    c.wr_id = cq_ex_->wr_id;
    c.status = cq_ex_->status;
    if (c.status == IBV_WC_SUCCESS) c.opcode = ibv_wc_read_opcode(cq_ex_);
    if (timestamps_) c.timestamp = ibv_wc_read_completion_ts(cq_ex_);
    if (datagrams_) {
      c.byte_len = ibv_wc_read_byte_len(cq_ex_);
      c.src_qp = ibv_wc_read_src_qp(cq_ex_);
      c.slid = ibv_wc_read_slid(cq_ex_);
      c.grh = (ibv_wc_read_wc_flags(cq_ex_) & IBV_WC_GRH) != 0;
    }
    if (n == out.size() || ibv_next_poll(cq_ex_) != 0) break;
  }
  ibv_end_poll(cq_ex_);
  return n;
}

Result<std::size_t> CompletionQueue::poll_plain(std::span<Completion> out) {
  std::array<ibv_wc, kPlainBatch> wc{};
  const int want = static_cast<int>(std::min(out.size(), wc.size()));
  const int got = ibv_poll_cq(cq_, want, wc.data());
  if (got < 0) return verbs_error(-got, "polling the CQ");
  for (std::size_t i = 0; i < static_cast<std::size_t>(got); ++i) {
    const ibv_wc& w = wc[i];
    Completion& c = out[i];
    c = Completion{};
    c.wr_id = w.wr_id;
    c.status = w.status;
    if (c.status == IBV_WC_SUCCESS) c.opcode = w.opcode;
    if (datagrams_) {
      c.byte_len = w.byte_len;
      c.src_qp = w.src_qp;
      c.slid = w.slid;
      c.grh = (w.wc_flags & IBV_WC_GRH) != 0;
    }
  }
  return static_cast<std::size_t>(got);
}

Status CompletionQueue::arm() {
  if (int rc = ibv_req_notify_cq(cq_, 0); rc != 0) return verbs_error(rc, "arming the CQ");
  return ok_status();
}

void CompletionQueue::consume_events() {
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  while (ibv_get_cq_event(channel_, &cq, &ctx) == 0) ibv_ack_cq_events(cq, 1);
}

}  // namespace rdma_exporter::probe
