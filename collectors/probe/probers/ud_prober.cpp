#include "collectors/probe/probers/ud_prober.hpp"

#include <algorithm>

#include "collectors/probe/wire/auth.hpp"
#include "common/log.hpp"

namespace rdma_exporter::probe {
namespace {

constexpr const char* kGroupLatencyHelp =
    "Network round trip of UD probes per local port, class and scope (group: targets in this "
    "host's own group of probe.pinglist.group_label, remote: the others): the probe's round "
    "trip less the responder's delay, timed with device completion timestamps "
    "(clock=\"device\") or the host clock (clock=\"host\").";
constexpr const char* kProberDelayHelp =
    "Time a UD probe spent in this host's software and PCIe path: host round trip less device "
    "round trip (only with device completion timestamps).";
constexpr const char* kResponderDelayHelp =
    "Responders' delay between receiving a UD probe and answering it, as their replies report "
    "it.";

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Probes in flight at most: a class whose timeout spans more intervals
// than this counts the oldest as lost early.
constexpr std::size_t kMaxInFlight = 64;

}  // namespace

UdTiming ud_timing(double host_rtt, std::optional<double> device_rtt, double responder_delay) {
  UdTiming t;
  t.responder_delay = std::max(0.0, responder_delay);
  t.device_clock = device_rtt.has_value();
  const double rtt = device_rtt.value_or(host_rtt);
  t.network = std::max(0.0, rtt - t.responder_delay);
  if (device_rtt) t.prober_delay = std::max(0.0, host_rtt - *device_rtt);
  return t;
}

UdProber::UdProber(boost::asio::io_context& io, std::string local_name,
                   std::shared_ptr<UdProbePort> port, const std::string& address,
                   const wire::PortAd& remote, ProbeClass cls, ProberSettings settings,
                   UdProberStats stats)
    : ControlClient(io, address, remote,
                    address + " " + local_name + "->" + remote.device + "/" +
                        std::to_string(remote.port) + " " + cls.name,
                    std::move(settings), stats.pair),
      local_name_(std::move(local_name)),
      port_(std::move(port)),
      class_(std::move(cls)),
      ud_stats_(std::move(stats)) {}

void UdProber::on_hello() {
  if (!port_) return fail(reason::setup, local_name_ + " has no UD queue pair (see the log)");
  if (!port_->working()) {
    return fail_verbs(reason::setup, Error{EIO, local_name_ + ": UD queue pair failed"});
  }
  wire::UdSetup setup;
  static_cast<QpParams&>(setup) = class_;
  setup.op = Op::ud;
  setup.peer = port_->address();
  setup.interval_ms = static_cast<uint32_t>(
      std::clamp<int64_t>(class_.interval.count(), 1, wire::kMaxUdIntervalMs));
  setup.device = remote_port_.device;
  setup.port = remote_port_.port;
  send_setup(std::move(setup));
}

void UdProber::on_accept(const wire::Message& answer) {
  const auto* accept = std::get_if<wire::UdAccept>(&answer);
  if (accept == nullptr) return fail(reason::protocol, "expected ud_accept or reject");
  UdProbePort::Session session;
  session.responder = accept->peer;
  session.sent = guarded([this](uint64_t seq, std::optional<uint64_t> ticks) {
    if (auto it = in_flight_.find(seq); it != in_flight_.end()) it->second.sent_ticks = ticks;
  });
  session.reply = guarded([this](const UdReply& reply) { on_reply(reply); });
  session_ = port_->open_session(std::move(session));
  established();
  next_probe_ = Clock::now();
  probe();
}

void UdProber::probe() {
  const Clock::time_point now = Clock::now();
  sweep(now);
  wire::Datagram request;
  request.seq = ++seq_;
  request.path = static_cast<uint8_t>(seq_ % class_.flows);
  request.tclass = class_.tclass;
  in_flight_[request.seq] = Probe{now, std::nullopt, request.path};
  if (Status s = port_->send_request(session_, request, class_.size, class_.sl); !s) {
    in_flight_.erase(request.seq);
    if (s.error().code == ENOBUFS) {
      stats_->error(reason::qp_error);  // the port is overloaded: skip this probe
    } else {
      return fail_verbs(reason::qp_error, s.error());
    }
  } else {
    stats_->sent();
    const uint64_t seq = request.seq;
    const uint64_t gen = generation_;
    port_->spin(class_.busy_poll, [this, seq] { return !in_flight_.contains(seq); });
    if (gen != generation_ || stopped_) return;  // torn down meanwhile
  }
  next_probe_ += class_.interval;
  if (next_probe_ < now) next_probe_ = now + class_.interval;
  timer_.expires_at(next_probe_);
  timer_.async_wait(guarded([this](const boost::system::error_code& ec) {
    if (!ec) probe();
  }));
}

void UdProber::sweep(Clock::time_point now) {
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    if (now - it->second.posted >= class_.timeout || in_flight_.size() > kMaxInFlight) {
      stats_->lost(it->second.path);
      it = in_flight_.erase(it);
    } else {
      ++it;
    }
  }
}

void UdProber::on_reply(const UdReply& reply) {
  auto it = in_flight_.find(reply.datagram.seq);
  if (it == in_flight_.end()) return;  // late: already counted as lost
  const Probe p = it->second;
  in_flight_.erase(it);
  if (reply.polled - p.posted >= class_.timeout) {
    stats_->lost(p.path);
    return;
  }
  const double host_rtt = std::chrono::duration<double>(reply.polled - p.posted).count();
  std::optional<double> device_rtt;
  if (p.sent_ticks && reply.ticks && *reply.ticks >= *p.sent_ticks) {
    device_rtt = ticks_to_seconds(*reply.ticks - *p.sent_ticks, port_->clock_khz());
  }
  const UdTiming t =
      ud_timing(host_rtt, device_rtt, static_cast<double>(reply.datagram.responder_delay_ns) / 1e9);
  recovered();
  stats_->success(t.network, unix_now());
  if (ud_stats_.latency) ud_stats_.latency->observe(t.network);
  if (ud_stats_.responder_delay) ud_stats_.responder_delay->observe(t.responder_delay);
  if (ud_stats_.prober_delay && t.prober_delay) ud_stats_.prober_delay->observe(*t.prober_delay);
}

void UdProber::on_teardown() {
  // What was in flight when the session failed got no reply; a prober
  // stopped (its pair left the pinglist) loses nothing.
  if (!stopped_) {
    for (const auto& [seq, p] : in_flight_) stats_->lost(p.path);
  }
  in_flight_.clear();
  if (session_ != 0 && port_) {
    port_->close_session(session_);
    session_ = 0;
  }
}

UdProberStats ud_prober_histograms(ProbeStats& stats, const LocalPort& local, const ProbeClass& cls,
                                   const char* scope,
                                   std::vector<std::shared_ptr<HistogramStats>>& keep) {
  const bool device_clock = local.ud && local.ud->timestamps();
  Labels port_labels = {{"device", local.device->name()},
                        {"port", std::to_string(local.info.port)},
                        {"rail", local.rail},
                        {"op", op_name(cls.op)},
                        {"size", std::to_string(cls.size)},
                        {"tclass", std::to_string(cls.tclass)},
                        {"clock", device_clock ? "device" : "host"}};
  UdProberStats ud;
  ud.responder_delay =
      stats.histogram("rdma_probe_responder_delay_seconds", kResponderDelayHelp, port_labels);
  keep.push_back(ud.responder_delay);
  if (device_clock) {
    ud.prober_delay =
        stats.histogram("rdma_probe_prober_delay_seconds", kProberDelayHelp, port_labels);
    keep.push_back(ud.prober_delay);
  }
  Labels group_labels = port_labels;
  group_labels.emplace_back("scope", scope);
  ud.latency = stats.histogram("rdma_probe_group_latency_seconds", kGroupLatencyHelp, group_labels);
  keep.push_back(ud.latency);
  return ud;
}

}  // namespace rdma_exporter::probe
