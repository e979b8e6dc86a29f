#include "exporter/probe/ud/port.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <boost/asio/post.hpp>

#include "common/log.hpp"
#include "exporter/probe/verbs/error.hpp"

namespace rdma_exporter::probe {
UdPort::UdPort(boost::asio::io_context& io, LocalPort port, UdPortSettings settings,
               std::shared_ptr<UdPortStats> stats)
    : io_(io), port_(std::move(port)), settings_(std::move(settings)), stats_(std::move(stats)) {}

UdPort::~UdPort() {
  close();
  qp_.reset();  // its sends' address handles go after it
  ahs_.clear();
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
  auto qp = UdQueuePair::create(dev, UdQueuePairConfig{.port = info_,
                                                       .qkey = qkey_,
                                                       .max_size = settings_.max_size,
                                                       .recv_depth = settings_.recv_depth,
                                                       .send_depth = settings_.send_depth,
                                                       .memory = settings_.memory,
                                                       .where = where});
  if (!qp) return qp.error();
  qp_ = std::move(qp.value());
  send_slots_.resize(settings_.send_depth);
  events_.emplace(io_, qp_->completions().fd());
  return ok_status();
}

wire::UdPeer UdPort::address() const {
  return wire::UdPeer{qp_->qpn(), qkey_, info_.lid, info_.gid};
}

std::optional<uint64_t> UdPort::admit(const wire::UdPeer& prober, uint8_t sl, uint8_t tclass,
                                      std::chrono::milliseconds interval) {
  auto id = admissions_.admit(prober.gid, prober.qpn,
                              UdAdmission{prober.qkey, sl, tclass, interval}, Clock::now());
  count_peers();
  return id;
}

void UdPort::revoke(uint64_t admission) {
  // A queue pair without admissions left: its sessions' numbers go.
  if (auto gone = admissions_.revoke(admission, Clock::now()))
    sequences_.forget(gone->first, gone->second);
  count_peers();
}

void UdPort::set_group_peers(std::set<Gid> gids) {
  group_peers_ = std::move(gids);
  count_peers();
}

void UdPort::count_peers() {
  const auto [group, remote] = admissions_.peers_split(group_peers_);
  stats_->set_peers(group, remote);
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

Status UdPort::post(uint32_t slot, uint32_t size, ibv_ah* ah, uint32_t qpn, uint32_t qkey) {
  if (Status s = qp_->post_send(slot, size, ah, qpn, qkey); !s) return s;
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
  wire::Datagram d = request;
  d.kind = wire::DatagramKind::request;
  d.session = id;
  d.flags = 0;
  d.responder_delay_ns = 0;
  wire::encode_datagram(d, qp_->send_buffer(*slot));
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
  const std::span<uint8_t> buf = qp_->send_buffer(*slot).first(bytes.size());
  std::copy(bytes.begin(), bytes.end(), buf.begin());
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
  wire::encode_datagram(d, buf);
  if (Status s = post(*slot, static_cast<uint32_t>(bytes.size()), *handle, qpn, qkey); !s) {
    log::debug("probe: UD send failed", {{"port", port_.name()}, {"err", s.error().message}});
    return stats_->dropped(ud_drop::send_error);
  }
  send_slots_[*slot].request = false;
  stats_->answered();
}

void UdPort::on_receive(uint32_t slot, const Completion& c, Clock::time_point polled) {
  constexpr std::size_t kGrh = UdBufferSlots::kGrhSize;
  const std::span<const uint8_t> filled = qp_->received(slot);
  std::optional<Gid> from;
  if (c.grh) from = grh_source_gid(filled.first<kGrh>());
  if (!c.grh) from = Gid{};  // InfiniBand within a subnet: no GRH, the LID says who
  if (!from || c.byte_len < kGrh || c.byte_len > filled.size()) {
    return stats_->dropped(ud_drop::malformed);
  }
  const std::span<const uint8_t> bytes = filled.subspan(kGrh, c.byte_len - kGrh);
  auto d = wire::decode_datagram(bytes);
  if (!d) return stats_->dropped(ud_drop::malformed);
  if (d->kind == wire::DatagramKind::request) return on_request(*d, bytes, *from, c, polled);
  on_reply(*d, c.grh ? from : std::nullopt, c, polled);
}

void UdPort::on_request(const wire::Datagram& request, std::span<const uint8_t> bytes,
                        const Gid& from, const Completion& c, Clock::time_point polled) {
  // Only the paths a class can have: each is an address handle.
  if (request.path >= kMaxUdPaths) return stats_->dropped(ud_drop::malformed);
  const UdAdmissions::Answer a = admissions_.request(from, c.src_qp, request.tclass, polled);
  // It arrived after the queue was last seen empty, and may have waited
  // through a stall since.
  const bool stalled = settings_.stalls && settings_.stalls->stalled_between(cq_empty_at_, polled);
  if (a.verdict == UdAdmissions::Verdict::not_admitted) {
    return stats_->dropped(ud_drop::not_admitted);
  }
  if (a.verdict == UdAdmissions::Verdict::rate_limited) {
    return stats_->dropped(ud_drop::rate_limited);
  }
  // Only within its rate: a flood of session numbers costs at most that.
  stats_->request(group_peers_.contains(from) ? ProberScope::group : ProberScope::remote,
                  sequences_.received(from, c.src_qp, request.session, request.seq));
  for (const UdAdmissions::Reply& r : a.list()) {
    answer(request, bytes, from, c.src_qp, c.slid, r.qkey, r.sl, c.timestamp, polled, stalled);
  }
}

void UdPort::on_reply(const wire::Datagram& reply, const std::optional<Gid>& from,
                      const Completion& c, Clock::time_point polled) {
  auto it = sessions_.find(reply.session);
  if (it == sessions_.end() || !from_responder(it->second.responder, from, c.src_qp)) {
    return stats_->dropped(ud_drop::unexpected);
  }
  // The session may close from inside its handler: keep what it needs.
  auto handler = it->second.reply;
  handler(UdReply{reply, c.timestamp, polled});
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
  std::size_t handled = 0;
  std::array<Completion, 32> batch{};
  for (;;) {
    if (handled >= budget) return true;
    const std::size_t want = std::min(batch.size(), budget - handled);
    auto got = qp_->completions().poll(std::span(batch).first(want));
    if (!got) {
      fail(got.error().message);
      return false;
    }
    const Clock::time_point polled = Clock::now();
    if (*got == 0) {
      cq_empty_at_ = polled;
      return false;
    }
    handled += *got;
    if (settings_.stalls) settings_.stalls->check(polled);
    for (std::size_t i = 0; i < *got; ++i) {
      if (!on_completion(batch[i], polled)) return false;
    }
    if (*got < want) cq_empty_at_ = polled;  // the poll emptied the queue
  }
}

bool UdPort::on_completion(const Completion& c, Clock::time_point polled) {
  const std::weak_ptr<bool> alive = alive_;
  if (const std::optional<uint32_t> sent = UdQueuePair::send_slot(c.wr_id)) {
    on_sent(*sent, c.status == IBV_WC_SUCCESS, c.timestamp);
    return !alive.expired() && !closed_;
  }
  const uint32_t slot = UdQueuePair::recv_slot(c.wr_id);
  if (c.status == IBV_WC_SUCCESS) {
    on_receive(slot, c, polled);
  } else if (c.status != IBV_WC_WR_FLUSH_ERR) {
    stats_->dropped(ud_drop::malformed);
  }
  if (alive.expired() || closed_) return false;
  if (c.status == IBV_WC_WR_FLUSH_ERR) {
    fail("receives flushed: the queue pair failed");
    return false;
  }
  if (Status s = qp_->post_recv(slot); !s) {
    fail(s.error().message);
    return false;
  }
  return true;
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
  if (Status s = qp_->completions().arm(); !s) return fail(s.error().message);
  // What arrived before arming raises no event. A flood is taken in
  // portions, with the event loop's other work in between.
  if (drain(kMaxCompletionsPerWake)) return later();
  if (closed_ || broken_) return;
  events_->async_wait(
      boost::asio::posix::stream_descriptor::wait_read,
      [this, alive = std::weak_ptr<bool>(alive_)](const boost::system::error_code& ec) {
        if (ec || alive.expired() || closed_) return;
        qp_->completions().consume_events();
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
