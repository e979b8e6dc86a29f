#include "exporter/probe/ud/port.hpp"

#include <fcntl.h>
#include <openssl/rand.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cstring>

#include "common/errno_text.hpp"
#include "common/log.hpp"
#include "exporter/probe/verbs/access.hpp"
#include "exporter/probe/verbs/error.hpp"

namespace rdma_exporter::probe {
namespace {

constexpr std::size_t kGrhSize = 40;
// Send work requests carry this bit; receives carry their slot number.
constexpr uint64_t kSendTag = 1ull << 62;

}  // namespace

UdPort::UdPort(boost::asio::io_context& io, LocalPort port, UdPortSettings settings,
               std::shared_ptr<UdPortStats> stats)
    : io_(io), port_(std::move(port)), settings_(std::move(settings)), stats_(std::move(stats)) {}

UdPort::~UdPort() {
  close();
  if (qp_) ibv_destroy_qp(qp_);
  ahs_.clear();
  if (cq_) ibv_destroy_cq(cq_);
  if (channel_) ibv_destroy_comp_channel(channel_);
}

Result<std::unique_ptr<UdPort>> UdPort::create(boost::asio::io_context& io, const LocalPort& port,
                                               const UdPortSettings& settings,
                                               std::shared_ptr<UdPortStats> stats) {
  std::unique_ptr<UdPort> p(new UdPort(io, port, settings, std::move(stats)));
  if (Status s = p->init(); !s) return s.error();
  p->wait();
  return p;
}

Status UdPort::init() {
  const Device& dev = *port_.device;
  ibv_context* ctx = dev.context();
  const std::string where = port_.name() + ": UD queue pair";
  info_ = port_.info;
  if (settings_.gid_index >= 0) {
    auto info = dev.port(port_.info.port, settings_.gid_index);
    if (!info) return info.error();
    info_ = *info;
  }
  auto qkey = choose_qkey(RAND_bytes);
  if (!qkey) return Error{qkey.error().code, where + ": " + qkey.error().message};
  qkey_ = *qkey;
  const std::size_t slot = kGrhSize + settings_.max_size;
  auto memory = Memory::create(
      dev, slot * settings_.recv_depth + std::size_t{settings_.max_size} * settings_.send_depth,
      settings_.memory, access_for(Op::ud, Role::responder).memory);
  if (!memory) return memory.error();
  memory_ = std::move(memory.value());
  send_slots_.resize(settings_.send_depth);

  channel_ = ibv_create_comp_channel(ctx);
  if (channel_ == nullptr) return verbs_error(errno, where + ": completion channel");
  const int flags = ::fcntl(channel_->fd, F_GETFL);
  if (flags < 0 || ::fcntl(channel_->fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return Error::system(errno, where + ": completion channel: O_NONBLOCK");
  }
  const int cqe = static_cast<int>(settings_.recv_depth + settings_.send_depth);
  if (dev.completion_timestamps() || dev.thread_domain()) {
    ibv_cq_init_attr_ex attr{};
    attr.cqe = static_cast<uint32_t>(cqe);
    attr.channel = channel_;
    attr.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID;
    if (dev.completion_timestamps()) attr.wc_flags |= IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
    if (dev.thread_domain()) {
      attr.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
      attr.parent_domain = dev.resource_pd();
    }
    if (ibv_cq_ex* cq = ibv_create_cq_ex(ctx, &attr); cq != nullptr) {
      cq_ = ibv_cq_ex_to_cq(cq);
      cq_ex_ = cq;
    }
  }
  if (cq_ == nullptr) {
    cq_ = ibv_create_cq(ctx, cqe, nullptr, channel_, 0);
    if (cq_ == nullptr) return verbs_error(errno, where + ": creating a CQ");
  }

  ibv_qp_init_attr init{};
  init.send_cq = cq_;
  init.recv_cq = cq_;
  init.qp_type = IBV_QPT_UD;
  init.sq_sig_all = 1;
  init.cap.max_send_wr = settings_.send_depth;
  init.cap.max_recv_wr = settings_.recv_depth;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  qp_ = ibv_create_qp(dev.resource_pd(), &init);
  if (qp_ == nullptr) return verbs_error(errno, where + ": creating");

  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = info_.port;
  a.qkey = qkey_;
  if (int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
      rc != 0) {
    return verbs_error(rc, where + ": to INIT");
  }
  for (uint32_t i = 0; i < settings_.recv_depth; ++i) {
    if (Status s = post_recv(i); !s) return s;
  }
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  if (int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE); rc != 0) {
    return verbs_error(rc, where + ": to RTR");
  }
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0;
  if (int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_SQ_PSN); rc != 0) {
    return verbs_error(rc, where + ": to RTS");
  }
  events_.emplace(io_, channel_->fd);
  return ok_status();
}

wire::UdPeer UdPort::address() const {
  return wire::UdPeer{qp_->qp_num, qkey_, info_.lid, info_.gid};
}

std::optional<uint64_t> UdPort::admit(const wire::UdPeer& prober, uint8_t sl, uint8_t tclass,
                                      std::chrono::milliseconds interval) {
  auto id = admissions_.admit(prober.gid, prober.qpn,
                              UdAdmission{prober.qkey, sl, tclass, interval}, Clock::now());
  stats_->set_peers(admissions_.peers());
  return id;
}

void UdPort::revoke(uint64_t admission) {
  // A queue pair without admissions left: its sessions' numbers go.
  if (auto gone = admissions_.revoke(admission, Clock::now()))
    sequences_.forget(gone->first, gone->second);
  stats_->set_peers(admissions_.peers());
}

void UdPort::count_address_handles() {
  stats_->set_address_handles(ahs_.live() + ahs_.retired());
}

uint32_t UdPort::open_session(Session session) {
  auto number =
      choose_session_number(RAND_bytes, [this](uint32_t n) { return sessions_.contains(n); });
  // Without random bytes, the next unused number: routing still works, only
  // a blind forger's guess is easier (docs/security.md).
  while (!number || *number == 0 || sessions_.contains(*number)) number = next_session_++;
  sessions_[*number] = std::move(session);
  return *number;
}

void UdPort::close_session(uint32_t id) {
  sessions_.erase(id);
}

std::optional<uint32_t> UdPort::free_slot() {
  for (uint32_t i = 0; i < send_slots_.size(); ++i) {
    if (!send_slots_[i].busy) return i;
  }
  return std::nullopt;
}

Result<ibv_ah*> UdPort::ah(const Gid& gid, uint16_t lid, uint8_t tclass, uint8_t sl, uint8_t path) {
  const uint32_t flow = path_flow_label(path);
  const AddressHandles::Key key{gid, lid, tclass, sl, flow};
  if (ibv_ah* h = ahs_.find(key); h != nullptr) return h;
  ibv_ah_attr attr{};
  attr.dlid = lid;
  attr.sl = sl;
  attr.port_num = info_.port;
  const bool has_gid = std::any_of(gid.begin(), gid.end(), [](uint8_t b) { return b != 0; });
  if (info_.ethernet || has_gid) {
    attr.is_global = 1;
    std::memcpy(attr.grh.dgid.raw, gid.data(), 16);
    attr.grh.sgid_index = static_cast<uint8_t>(info_.gid_index);
    attr.grh.hop_limit = 64;
    attr.grh.traffic_class = tclass;
    attr.grh.flow_label = flow;
  }
  ibv_ah* h = ibv_create_ah(port_.device->resource_pd(), &attr);
  if (h == nullptr) {
    // Some devices take no flow label in an address handle.
    attr.grh.flow_label = 0;
    h = ibv_create_ah(port_.device->resource_pd(), &attr);
  }
  if (h == nullptr)
    return verbs_error(errno, port_.name() + ": address handle for " + gid_text(gid));
  ahs_.add(key, h);
  count_address_handles();
  return h;
}

Status UdPort::post_recv(uint32_t slot) {
  ibv_sge sge{};
  sge.addr = memory_->address() + std::size_t{slot} * (kGrhSize + settings_.max_size);
  sge.length = static_cast<uint32_t>(kGrhSize + settings_.max_size);
  sge.lkey = memory_->lkey();
  ibv_recv_wr wr{};
  wr.wr_id = slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_recv(qp_, &wr, &bad); rc != 0) {
    return verbs_error(rc, port_.name() + ": posting a UD receive");
  }
  return ok_status();
}

Status UdPort::post(uint32_t slot, uint32_t size, ibv_ah* ah, uint32_t qpn, uint32_t qkey) {
  ibv_sge sge{};
  sge.addr = memory_->address() +
             std::size_t{settings_.recv_depth} * (kGrhSize + settings_.max_size) +
             std::size_t{slot} * settings_.max_size;
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
    return verbs_error(rc, port_.name() + ": posting a UD send");
  }
  send_slots_[slot].busy = true;
  send_slots_[slot].ah = ah;
  ahs_.posted(ah);
  ++in_flight_;
  return ok_status();
}

Status UdPort::send_request(uint32_t id, const wire::Datagram& request, uint32_t size, uint8_t sl) {
  if (broken_ || closed_) return Error{EIO, port_.name() + ": the UD queue pair failed"};
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return Error{EINVAL, "no such UD session"};
  if (size < wire::kDatagramSize || size > settings_.max_size) {
    return Error{EINVAL, "datagram size " + std::to_string(size) + " outside 32 to " +
                             std::to_string(settings_.max_size)};
  }
  const std::optional<uint32_t> slot = free_slot();
  if (!slot) {
    stats_->dropped(ud_drop::send_queue_full);
    return Error{ENOBUFS, port_.name() + ": UD send queue full"};
  }
  const wire::UdPeer& to = it->second.responder;
  auto handle = ah(to.gid, to.lid, request.tclass, sl, request.path);
  if (!handle) return handle.error();
  uint8_t* buf = memory_->data() +
                 std::size_t{settings_.recv_depth} * (kGrhSize + settings_.max_size) +
                 std::size_t{*slot} * settings_.max_size;
  wire::Datagram d = request;
  d.kind = wire::DatagramKind::request;
  d.session = id;
  d.flags = 0;
  d.responder_delay_ns = 0;
  wire::encode_datagram(d, std::span<uint8_t>(buf, settings_.max_size));
  if (Status s = post(*slot, size, *handle, to.qpn, to.qkey); !s) return s;
  SendSlot& ss = send_slots_[*slot];
  ss.request = true;
  ss.session = id;
  ss.seq = d.seq;
  return ok_status();
}

void UdPort::answer(const wire::Datagram& request, std::span<const uint8_t> bytes, const Gid& from,
                    uint32_t qpn, uint16_t lid, uint32_t qkey, uint8_t sl,
                    std::optional<uint64_t> ticks, Clock::time_point polled, bool stalled) {
  const std::optional<uint32_t> slot = free_slot();
  if (!slot) return stats_->dropped(ud_drop::send_queue_full);
  auto handle = ah(from, lid, request.tclass, sl, request.path);
  if (!handle) {
    log::debug("probe: UD send failed", {{"port", port_.name()}, {"err", handle.error().message}});
    return stats_->dropped(ud_drop::send_error);
  }
  uint8_t* buf = memory_->data() +
                 std::size_t{settings_.recv_depth} * (kGrhSize + settings_.max_size) +
                 std::size_t{*slot} * settings_.max_size;
  std::memcpy(buf, bytes.data(), bytes.size());
  wire::Datagram d = request;
  d.kind = wire::DatagramKind::reply;
  // T4 - T3 on the clock T3 was read with: the device's when its
  // completions carry timestamps, else the host's.
  std::optional<uint64_t> now_ticks;
  if (ticks) now_ticks = port_.device->raw_clock();
  if (ticks && now_ticks && *now_ticks >= *ticks) {
    d.flags = wire::kDelayDeviceClock;
    const double s = ticks_to_seconds(*now_ticks - *ticks, port_.device->core_clock_khz());
    d.responder_delay_ns = static_cast<uint64_t>(s * 1e9);
  } else {
    d.flags = 0;
    d.responder_delay_ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - polled).count());
  }
  d.responder_delay_ns = std::min(d.responder_delay_ns, wire::kMaxResponderDelayNs);
  if (stalled) d.flags |= wire::kResponderStalled;
  wire::encode_datagram(d, std::span<uint8_t>(buf, bytes.size()));
  if (Status s = post(*slot, static_cast<uint32_t>(bytes.size()), *handle, qpn, qkey); !s) {
    log::debug("probe: UD send failed", {{"port", port_.name()}, {"err", s.error().message}});
    return stats_->dropped(ud_drop::send_error);
  }
  send_slots_[*slot].request = false;
  stats_->answered();
}

void UdPort::on_receive(uint32_t slot, uint32_t byte_len, uint32_t src_qp, uint16_t slid, bool grh,
                        std::optional<uint64_t> ticks, Clock::time_point polled) {
  const uint8_t* base = memory_->data() + std::size_t{slot} * (kGrhSize + settings_.max_size);
  std::optional<Gid> from;
  if (grh) from = grh_source_gid(std::span<const uint8_t, 40>(base, kGrhSize));
  if (!grh) from = Gid{};  // InfiniBand within a subnet: no GRH, the LID says who
  if (!from || byte_len < kGrhSize) return stats_->dropped(ud_drop::malformed);
  const std::span<const uint8_t> bytes(base + kGrhSize, byte_len - kGrhSize);
  auto d = wire::decode_datagram(bytes);
  if (!d) return stats_->dropped(ud_drop::malformed);
  if (d->kind == wire::DatagramKind::request) {
    // Only the paths a class can have: each is an address handle.
    if (d->path >= kMaxUdPaths) return stats_->dropped(ud_drop::malformed);
    const UdAdmissions::Answer a = admissions_.request(*from, src_qp, d->tclass, polled);
    // It arrived after the queue was last seen empty, and may have waited
    // through a stall since.
    const bool stalled =
        settings_.stalls && settings_.stalls->stalled_between(cq_empty_at_, polled);
    if (a.verdict == UdAdmissions::Verdict::not_admitted) {
      return stats_->dropped(ud_drop::not_admitted);
    }
    if (a.verdict == UdAdmissions::Verdict::rate_limited) {
      return stats_->dropped(ud_drop::rate_limited);
    }
    // Only within its rate: a flood of session numbers costs at most that.
    stats_->request(sequences_.received(*from, src_qp, d->session, d->seq));
    for (const UdAdmissions::Reply& r : a.list()) {
      answer(*d, bytes, *from, src_qp, slid, r.qkey, r.sl, ticks, polled, stalled);
    }
    return;
  }
  auto it = sessions_.find(d->session);
  if (it == sessions_.end() ||
      !from_responder(it->second.responder, grh ? from : std::nullopt, src_qp)) {
    return stats_->dropped(ud_drop::unexpected);
  }
  // The session may close from inside its handler: keep what it needs.
  auto handler = it->second.reply;
  handler(UdReply{*d, ticks, polled});
}

void UdPort::on_sent(uint32_t slot, bool ok, std::optional<uint64_t> ticks) {
  if (slot >= send_slots_.size() || !send_slots_[slot].busy) return;
  SendSlot s = send_slots_[slot];
  send_slots_[slot] = SendSlot{};
  --in_flight_;
  const std::size_t retired = ahs_.retired();
  ahs_.completed(s.ah);  // a retired handle goes with its last send
  if (ahs_.retired() != retired) count_address_handles();
  if (!ok) return stats_->dropped(ud_drop::send_error);
  if (!s.request) return;
  auto it = sessions_.find(s.session);
  if (it == sessions_.end() || !it->second.sent) return;
  auto handler = it->second.sent;
  handler(s.seq, ticks);
}

bool UdPort::drain(std::size_t budget) {
  if (broken_ || closed_) return false;
  const std::weak_ptr<bool> alive = alive_;
  std::size_t handled = 0;
  for (;;) {
    if (handled >= budget) return true;
    const std::size_t want = std::min<std::size_t>(32, budget - handled);
    struct Wc {
      uint64_t wr_id;
      ibv_wc_status status;
      uint32_t byte_len;
      uint32_t src_qp;
      uint16_t slid;
      bool grh;
      std::optional<uint64_t> ts;
    };
    std::array<Wc, 32> wc{};
    std::size_t n = 0;
    if (cq_ex_ != nullptr) {
      ibv_poll_cq_attr attr{};
      const int rc = ibv_start_poll(cq_ex_, &attr);
      if (rc == ENOENT) {
        cq_empty_at_ = Clock::now();
        return false;
      }
      if (rc != 0) {
        fail("polling the CQ: " + errno_text(rc));
        return false;
      }
      for (;;) {
        Wc& c = wc[n++];
        c.wr_id = cq_ex_->wr_id;
        c.status = cq_ex_->status;
        c.byte_len = ibv_wc_read_byte_len(cq_ex_);
        c.src_qp = ibv_wc_read_src_qp(cq_ex_);
        c.slid = ibv_wc_read_slid(cq_ex_);
        c.grh = (ibv_wc_read_wc_flags(cq_ex_) & IBV_WC_GRH) != 0;
        if (port_.device->completion_timestamps()) c.ts = ibv_wc_read_completion_ts(cq_ex_);
        if (n == want || ibv_next_poll(cq_ex_) != 0) break;
      }
      ibv_end_poll(cq_ex_);
    } else {
      std::array<ibv_wc, 32> raw{};
      const int got = ibv_poll_cq(cq_, static_cast<int>(want), raw.data());
      if (got < 0) {
        fail("polling the CQ: " + errno_text(-got));
        return false;
      }
      if (got == 0) {
        cq_empty_at_ = Clock::now();
        return false;
      }
      for (int i = 0; i < got; ++i) {
        const ibv_wc& r = raw[static_cast<std::size_t>(i)];
        wc[n++] =
            Wc{r.wr_id,     r.status, r.byte_len, r.src_qp, r.slid, (r.wc_flags & IBV_WC_GRH) != 0,
               std::nullopt};
      }
    }
    handled += n;
    const Clock::time_point polled = Clock::now();
    if (settings_.stalls) settings_.stalls->check(polled);
    for (std::size_t i = 0; i < n; ++i) {
      const Wc& c = wc[i];
      if ((c.wr_id & kSendTag) != 0) {
        on_sent(static_cast<uint32_t>(c.wr_id & ~kSendTag), c.status == IBV_WC_SUCCESS, c.ts);
      } else {
        const auto slot = static_cast<uint32_t>(c.wr_id);
        if (c.status == IBV_WC_SUCCESS) {
          on_receive(slot, c.byte_len, c.src_qp, c.slid, c.grh, c.ts, polled);
        } else if (c.status != IBV_WC_WR_FLUSH_ERR) {
          stats_->dropped(ud_drop::malformed);
        }
        if (alive.expired() || closed_) return false;
        if (c.status == IBV_WC_WR_FLUSH_ERR) {
          fail("receives flushed: the queue pair failed");
          return false;
        }
        if (Status s = post_recv(slot); !s) {
          fail(s.error().message);
          return false;
        }
      }
      if (alive.expired() || closed_) return false;
    }
    if (n < want) cq_empty_at_ = polled;  // the poll emptied the queue
  }
}

void UdPort::spin(std::chrono::microseconds limit, const std::function<bool()>& done) {
  const auto until = Clock::now() + limit;
  const std::weak_ptr<bool> alive = alive_;
  while (!done() && Clock::now() < until) {
    drain(kMaxCompletionsPerWake);
    if (alive.expired() || closed_ || broken_) return;
  }
}

void UdPort::wait() {
  if (closed_ || broken_) return;
  if (int rc = ibv_req_notify_cq(cq_, 0); rc != 0) return fail("arming the CQ");
  // What arrived before arming raises no event. A flood is taken in
  // portions, with the event loop's other work in between.
  if (drain(kMaxCompletionsPerWake)) return later();
  if (closed_ || broken_) return;
  events_->async_wait(
      boost::asio::posix::stream_descriptor::wait_read,
      [this, alive = std::weak_ptr<bool>(alive_)](const boost::system::error_code& ec) {
        if (ec || alive.expired() || closed_) return;
        ibv_cq* cq = nullptr;
        void* ctx = nullptr;
        while (ibv_get_cq_event(channel_, &cq, &ctx) == 0) ibv_ack_cq_events(cq, 1);
        if (drain(kMaxCompletionsPerWake)) return later();
        wait();
      });
}

void UdPort::later() {
  if (closed_ || broken_) return;
  boost::asio::post(io_, [this, alive = std::weak_ptr<bool>(alive_)] {
    if (alive.expired() || closed_) return;
    wait();
  });
}

void UdPort::fail(const std::string& what) {
  if (broken_) return;
  broken_ = true;
  log::warn("probe: UD queue pair failed", {{"port", port_.name()}, {"err", what}});
  stats_->dropped(ud_drop::queue_pair_failed);
}

void UdPort::close() {
  if (closed_) return;
  closed_ = true;
  alive_.reset();
  events_.reset();
  sessions_.clear();
}

}  // namespace rdma_exporter::probe
