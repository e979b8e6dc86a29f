#include "exporter/probe/probers/rc_prober.hpp"

#include <algorithm>

#include "common/log.hpp"
#include "exporter/probe/verbs/endpoint.hpp"
#include "exporter/probe/wire/auth.hpp"

namespace rdma_exporter::probe {
namespace {

bool remote_status(ibv_wc_status s) {
  return s == IBV_WC_REM_ACCESS_ERR || s == IBV_WC_REM_INV_REQ_ERR || s == IBV_WC_REM_OP_ERR ||
         s == IBV_WC_REM_ABORT_ERR || s == IBV_WC_REM_INV_RD_REQ_ERR;
}

}  // namespace

RcQueuePairMaker device_queue_pairs(const LocalPort& local, std::string memory) {
  return [device = local.device, info = local.info, memory = std::move(memory)](
             const QpParams& params, int gid_index,
             uint32_t recv_depth) -> Result<std::unique_ptr<RcQueuePair>> {
    auto port = gid_index < 0 ? Result<PortInfo>(info) : device->port(info.port, gid_index);
    if (!port) return port.error();
    auto endpoint = Endpoint::create(device, EndpointConfig{params, *port, recv_depth, memory});
    if (!endpoint) return endpoint.error();
    return std::unique_ptr<RcQueuePair>(std::move(endpoint.value()));
  };
}

Prober::Prober(boost::asio::io_context& io, const std::string& local_name, RcQueuePairMaker make,
               const std::string& address, const wire::PortAd& remote, ProbeClass cls,
               ProberSettings settings, std::shared_ptr<SeriesStats> stats)
    : ControlClient(io, address, remote,
                    address + " " + local_name + "->" + remote.device + "/" +
                        std::to_string(remote.port) + " " + cls.name,
                    std::move(settings), std::move(stats)),
      make_(std::move(make)),
      class_(std::move(cls)),
      row_(*find_op(class_.op)) {}

void Prober::on_hello() {
  auto qp = make_(class_, class_.gid_index.value_or(settings_.gid_index), row_.prober_recv_depth);
  if (!qp) return fail_verbs(reason::setup, qp.error());
  qp_ = std::move(qp.value());

  wire::Setup setup{static_cast<const QpParams&>(class_), qp_->local()};
  setup.device = remote_port_.device;
  setup.port = remote_port_.port;
  send_setup(std::move(setup));
}

void Prober::on_accept(const wire::Message& answer) {
  const auto* accept = std::get_if<wire::Accept>(&answer);
  if (accept == nullptr) return fail(reason::protocol, "expected accept or reject");
  remote_ = accept->peer;
  // Recreating the endpoint is not needed for the loopback case where both
  // queue pairs share one device: RC works between any two QPs.
  if (Status s = qp_->connect(remote_); !s) return fail_verbs(reason::setup, s.error());
  channel_.emplace(io_, qp_->channel_fd());
  established();
  probe();
}

void Prober::probe() {
  flight_ = InFlight{};
  flight_.seq = ++seq_;
  flight_.active = true;
  flight_.echo_done = !row_.echo;
  flight_.started_ticks = qp_->clock_now();
  flight_.started = Clock::now();
  next_probe_ = flight_.started + class_.interval;
  if (Status s = qp_->post(flight_.seq, remote_); !s) {
    return fail_verbs(reason::qp_error, s.error());
  }
  stats_->sent();
  deadline_.expires_after(class_.timeout);
  deadline_.async_wait(guarded([this](const boost::system::error_code& ec) {
    if (!ec) on_deadline();
  }));
  spin();
}

bool Prober::stalled_since(Clock::time_point from) const {
  if (!settings_.stalls) return false;
  const auto now = Clock::now();
  settings_.stalls->check(now);
  return settings_.stalls->stalled_between(from, now);
}

void Prober::on_deadline() {
  // A stall may have kept the completion waiting in the queue, or kept
  // the responder from answering: look, and give it one more timeout.
  if (!flight_.extended && stalled_since(flight_.started)) {
    const uint64_t gen = generation_;
    if (drain()) return complete();
    if (gen != generation_) return;
    flight_.extended = true;
    deadline_.expires_after(class_.timeout);
    deadline_.async_wait(guarded([this](const boost::system::error_code& ec) {
      if (!ec) on_deadline();
    }));
    return;
  }
  probe_timed_out();
}

void Prober::spin() {
  const auto until = Clock::now() + class_.busy_poll;
  const uint64_t gen = generation_;
  do {
    if (drain()) return complete();
    if (gen != generation_) return;  // the session failed
  } while (Clock::now() < until);
  wait_for_completion();
}

void Prober::wait_for_completion() {
  const uint64_t gen = generation_;
  if (Status s = qp_->arm(); !s) return fail(reason::qp_error, s.error().message);
  // A completion that arrived before arming raises no event: look again.
  if (drain()) return complete();
  if (gen != generation_) return;
  channel_->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                       guarded([this](const boost::system::error_code& ec) {
                         if (ec) return;
                         qp_->consume_events();
                         const uint64_t g = generation_;
                         if (drain()) return complete();
                         if (g == generation_) wait_for_completion();
                       }));
}

bool Prober::drain() {
  std::array<Completion, 8> wc;
  for (;;) {
    auto n = qp_->poll(wc);
    if (!n) {
      fail(reason::qp_error, n.error().message);
      return false;
    }
    if (*n == 0) break;
    for (std::size_t i = 0; i < *n; ++i) {
      const Completion& c = wc[i];
      if (c.status != IBV_WC_SUCCESS) {
        const std::string what = std::string("completion: ") + ibv_wc_status_str(c.status);
        if (c.status == IBV_WC_RETRY_EXC_ERR || c.status == IBV_WC_RNR_RETRY_EXC_ERR) {
          probe_timed_out();
        } else {
          fail(remote_status(c.status) ? reason::remote_error : reason::qp_error, what);
        }
        return false;
      }
      if ((c.wr_id & RcQueuePair::kRecvTag) != 0) {
        if (Status s = qp_->post_recv(c.wr_id); !s) {
          fail(reason::qp_error, s.error().message);
          return false;
        }
        if (flight_.active && !flight_.echo_done) {
          flight_.echo_done = true;
          flight_.end_ticks = c.timestamp;
        }
      } else if (flight_.active && c.wr_id == flight_.seq) {
        flight_.op_done = true;
        if (!row_.echo) flight_.end_ticks = c.timestamp;
      }
    }
  }
  return flight_.active && flight_.op_done && flight_.echo_done;
}

void Prober::complete() {
  const auto now = Clock::now();
  deadline_.cancel();
  double seconds = std::chrono::duration<double>(now - flight_.started).count();
  if (flight_.started_ticks && flight_.end_ticks && *flight_.end_ticks >= *flight_.started_ticks) {
    seconds = ticks_to_seconds(*flight_.end_ticks - *flight_.started_ticks, qp_->clock_khz());
  }
  flight_.active = false;
  recovered();
  if (stalled_since(flight_.started)) {
    stats_->invalid(invalid::local_stall);
  } else {
    stats_->success(seconds, unix_now());
  }
  timer_.expires_at(std::max(next_probe_, now));
  timer_.async_wait(guarded([this](const boost::system::error_code& ec) {
    if (!ec) probe();
  }));
}

void Prober::probe_timed_out() {
  stats_->timeout();
  if (backoff_.failures() == 0) {
    log::warn("probe: no completion within the timeout; setting the session up again",
              {{"target", name_}, {"timeout", std::to_string(class_.timeout.count()) + "ms"}});
  }
  teardown();
  schedule_reconnect();
}

void Prober::on_teardown() {
  flight_.active = false;
  channel_.reset();
  qp_.reset();
}

}  // namespace rdma_exporter::probe
