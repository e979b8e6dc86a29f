#include "exporter/probe/probers/ud_prober.hpp"

#include <algorithm>

#include "common/log.hpp"
#include "exporter/probe/plan/probers.hpp"
#include "exporter/probe/wire/auth.hpp"

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

// Probes in flight at most: a class whose timeout spans more intervals
// than this counts the oldest as lost early.
constexpr std::size_t kMaxInFlight = 64;

// How long a reply is waited for: 4 timeouts, at most 10 s (the longest
// delay a responder reports). A reply later than the timeout is a loss
// unless a stall explains it.
std::chrono::milliseconds overdue_limit(std::chrono::milliseconds timeout) {
  return std::min<std::chrono::milliseconds>(
      4 * timeout, std::max<std::chrono::milliseconds>(
                       timeout, std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::nanoseconds(wire::kMaxResponderDelayNs))));
}

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

bool UdProber::stalled_between(Clock::time_point from, Clock::time_point to) const {
  return ud_stats_.stalls && ud_stats_.stalls->stalled_between(from, to);
}

void UdProber::sweep(Clock::time_point now) {
  if (ud_stats_.stalls) ud_stats_.stalls->check(now);
  // No reply, even a late one: lost, unless this host stalled while it
  // could have come.
  const auto unanswered = [this](const Probe& p) {
    if (stalled_between(p.posted, p.posted + class_.timeout)) {
      stats_->invalid(invalid::local_stall);
    } else {
      stats_->lost(p.path);
    }
  };
  for (auto it = overdue_.begin(); it != overdue_.end();) {
    if (now - it->second.posted >= overdue_limit(class_.timeout) ||
        overdue_.size() > kMaxInFlight) {
      unanswered(it->second);
      it = overdue_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    if (now - it->second.posted >= class_.timeout || in_flight_.size() > kMaxInFlight) {
      overdue_.insert(*it);
      it = in_flight_.erase(it);
    } else {
      ++it;
    }
  }
  while (overdue_.size() > kMaxInFlight) {
    unanswered(overdue_.begin()->second);
    overdue_.erase(overdue_.begin());
  }
}

void UdProber::on_reply(const UdReply& reply) {
  Probe p;
  if (auto it = in_flight_.find(reply.datagram.seq); it != in_flight_.end()) {
    p = it->second;
    in_flight_.erase(it);
  } else if (auto late = overdue_.find(reply.datagram.seq); late != overdue_.end()) {
    p = late->second;
    overdue_.erase(late);
  } else {
    return;  // later still: already counted
  }
  const double responder_delay = static_cast<double>(reply.datagram.responder_delay_ns) / 1e9;
  if (ud_stats_.responder_delay) ud_stats_.responder_delay->observe(responder_delay);
  if (ud_stats_.stalls) ud_stats_.stalls->check(reply.polled);
  if (stalled_between(p.posted, reply.polled)) return stats_->invalid(invalid::local_stall);
  if ((reply.datagram.flags & wire::kResponderStalled) != 0 ||
      responder_delay >= std::chrono::duration<double>(kStallThreshold).count()) {
    return stats_->invalid(invalid::responder_stall);
  }
  if (reply.polled - p.posted >= class_.timeout) return stats_->lost(p.path);
  const double host_rtt = std::chrono::duration<double>(reply.polled - p.posted).count();
  std::optional<double> device_rtt;
  if (p.sent_ticks && reply.ticks && *reply.ticks >= *p.sent_ticks) {
    device_rtt = ticks_to_seconds(*reply.ticks - *p.sent_ticks, port_->clock_khz());
  }
  const UdTiming t = ud_timing(host_rtt, device_rtt, responder_delay);
  recovered();
  stats_->success(t.network, unix_now());
  if (ud_stats_.latency) ud_stats_.latency->observe(t.network);
  if (ud_stats_.prober_delay && t.prober_delay) ud_stats_.prober_delay->observe(*t.prober_delay);
}

void UdProber::on_teardown() {
  // What was in flight when the session failed got no reply; a prober
  // stopped (its pair left the pinglist) loses nothing.
  if (!stopped_) {
    for (const auto* probes : {&overdue_, &in_flight_}) {
      for (const auto& [seq, p] : *probes) {
        if (stalled_between(p.posted, Clock::now())) {
          stats_->invalid(invalid::local_stall);
        } else {
          stats_->lost(p.path);
        }
      }
    }
  }
  in_flight_.clear();
  overdue_.clear();
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
  ud.stalls = stats.stalls();
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

std::shared_ptr<ScopeStats> ud_scope_stats(ProbeStats& stats, const LocalPort& local,
                                           const ProbeClass& cls, const char* scope) {
  return stats.scope(
      scope_labels(RailPort{local.device->name(), local.info.port, local.rail}, cls, scope));
}

}  // namespace rdma_exporter::probe
