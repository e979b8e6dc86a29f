#include "collectors/probe/prober.hpp"

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/error.hpp>

#include "collectors/probe/auth.hpp"
#include "common/address.hpp"
#include "common/log.hpp"

namespace rdma_exporter::probe {
namespace {

constexpr uint32_t kProberRecvDepth = 2;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool remote_status(ibv_wc_status s) {
  return s == IBV_WC_REM_ACCESS_ERR || s == IBV_WC_REM_INV_REQ_ERR || s == IBV_WC_REM_OP_ERR ||
         s == IBV_WC_REM_ABORT_ERR || s == IBV_WC_REM_INV_RD_REQ_ERR;
}

const char* reject_reason(wire::RejectCode code) {
  switch (code) {
    case wire::RejectCode::auth:
      return reason::auth;
    case wire::RejectCode::resources:
      return reason::remote_error;
    case wire::RejectCode::version:
    case wire::RejectCode::protocol:
      return reason::protocol;
    default:
      return reason::rejected;
  }
}

}  // namespace

Prober::Prober(boost::asio::io_context& io, LocalPort local, std::string address,
               wire::PortAd remote, ProbeClass cls, ProberSettings settings,
               std::shared_ptr<SeriesStats> stats)
    : io_(io),
      local_(std::move(local)),
      device_(local_.device),
      address_(std::move(address)),
      remote_port_(std::move(remote)),
      name_(address_ + " " + local_.name() + "->" + remote_port_.device + "/" +
            std::to_string(remote_port_.port) + " " + cls.name),
      class_(std::move(cls)),
      settings_(std::move(settings)),
      stats_(std::move(stats)),
      resolver_(io),
      timer_(io),
      deadline_(io),
      keepalive_(io) {}

template <typename Fn>
auto Prober::guarded(Fn fn) {
  return
      [self = shared_from_this(), gen = generation_, fn = std::move(fn)](auto&&... args) mutable {
        if (self->stopped_ || gen != self->generation_) return;
        fn(std::forward<decltype(args)>(args)...);
      };
}

void Prober::start() {
  connect();
}

void Prober::stop() {
  stopped_ = true;
  teardown();
}

void Prober::connect() {
  ListenAddress target;
  if (!parse_listen_address(address_, target) || target.host.empty()) {
    return fail(reason::unreachable, "target address is not host:port");
  }
  deadline_.expires_after(settings_.connect_timeout);
  deadline_.async_wait(guarded([this](const boost::system::error_code& ec) {
    if (!ec) fail(reason::connect_timeout, "no session within the connect timeout");
  }));
  resolver_.async_resolve(
      target.host, std::to_string(target.port),
      guarded([this](const boost::system::error_code& ec,
                     const boost::asio::ip::tcp::resolver::results_type& results) {
        if (ec) return fail(reason::unreachable, "resolving: " + ec.message());
        control_ = std::make_shared<ControlChannel>(boost::asio::ip::tcp::socket(io_));
        // The handler holds the channel: a teardown while connecting must
        // not free the socket the operation still uses.
        boost::asio::async_connect(
            control_->socket(), results,
            guarded([this, channel = control_](const boost::system::error_code& cec, const auto&) {
              if (cec) {
                const char* why = cec == boost::asio::error::connection_refused ? reason::refused
                                  : cec == boost::asio::error::timed_out ? reason::connect_timeout
                                                                         : reason::unreachable;
                return fail(why, "connecting: " + cec.message());
              }
              boost::system::error_code ignored;
              control_->socket().set_option(boost::asio::ip::tcp::no_delay(true), ignored);
              control_->read(guarded([this](Result<wire::Message> m) { on_hello(std::move(m)); }));
            }));
      }));
}

void Prober::on_hello(Result<wire::Message> msg) {
  if (!msg) {
    return fail(is_protocol_error(msg.error()) ? reason::protocol : reason::disconnected,
                msg.error().message);
  }
  const auto* hello = std::get_if<wire::Hello>(&msg.value());
  if (hello == nullptr) return fail(reason::protocol, "expected a hello");
  hello_ = *hello;
  if (hello_.auth_required && settings_.secret.empty()) {
    return fail(reason::auth, "the responder requires a shared secret (probe.secret_file)");
  }
  const bool listed = std::any_of(hello_.ports.begin(), hello_.ports.end(), [&](const auto& p) {
    return p.device == remote_port_.device && p.port == remote_port_.port;
  });
  if (!listed) {
    return fail(reason::rejected, "the target no longer answers on " + remote_port_.device + "/" +
                                      std::to_string(remote_port_.port));
  }
  const int gid_index = class_.gid_index.value_or(settings_.gid_index);
  auto port =
      gid_index < 0 ? Result<PortInfo>(local_.info) : device_->port(local_.info.port, gid_index);
  if (!port) return fail_verbs(reason::setup, port.error());
  const QpParams& qp = class_;
  const EndpointConfig config{qp, *port, class_.op == Op::send ? kProberRecvDepth : 0,
                              settings_.memory};
  auto endpoint = Endpoint::create(device_, config);
  if (!endpoint) return fail_verbs(reason::setup, endpoint.error());
  endpoint_ = std::move(endpoint.value());

  wire::Setup setup{qp, endpoint_->local()};
  setup.device = remote_port_.device;
  setup.port = remote_port_.port;
  if (!settings_.secret.empty()) setup.mac = setup_mac(settings_.secret, hello_.nonce, setup);
  control_->write(
      setup, guarded([this](Status s) {
        if (!s) return fail(reason::disconnected, s.error().message);
        control_->read(guarded([this](Result<wire::Message> m) { on_answer(std::move(m)); }));
      }));
}

void Prober::on_answer(Result<wire::Message> msg) {
  if (!msg) {
    return fail(is_protocol_error(msg.error()) ? reason::protocol : reason::disconnected,
                msg.error().message);
  }
  if (const auto* reject = std::get_if<wire::Reject>(&msg.value())) {
    return fail(reject_reason(reject->code), std::string("responder refused (") +
                                                 wire::reject_code_name(reject->code) +
                                                 "): " + reject->reason);
  }
  const auto* accept = std::get_if<wire::Accept>(&msg.value());
  if (accept == nullptr) return fail(reason::protocol, "expected accept or reject");
  remote_ = accept->peer;
  // Recreating the endpoint is not needed for the loopback case where both
  // queue pairs share one device: RC works between any two QPs.
  if (Status s = endpoint_->connect(remote_); !s) return fail_verbs(reason::setup, s.error());
  deadline_.cancel();
  channel_.emplace(io_, endpoint_->channel_fd());
  log::debug("probe " + name_ + ": session up");
  running();
}

void Prober::running() {
  watch_control();
  send_keepalive();
  probe();
}

void Prober::watch_control() {
  control_->read(guarded([this](Result<wire::Message> m) {
    if (!m) {
      return fail(is_protocol_error(m.error()) ? reason::protocol : reason::disconnected,
                  m.error().message);
    }
    if (std::holds_alternative<wire::Keepalive>(m.value())) return watch_control();
    if (const auto* reject = std::get_if<wire::Reject>(&m.value())) {
      return fail(reject_reason(reject->code),
                  std::string("responder closed the session: ") + reject->reason);
    }
    fail(reason::protocol, "unexpected message during a session");
  }));
}

void Prober::send_keepalive() {
  keepalive_.expires_after(settings_.keepalive);
  keepalive_.async_wait(guarded([this](const boost::system::error_code& ec) {
    if (ec) return;
    control_->write(wire::Keepalive{}, guarded([this](Status s) {
                      if (!s) return fail(reason::disconnected, s.error().message);
                      send_keepalive();
                    }));
  }));
}

void Prober::probe() {
  flight_ = InFlight{};
  flight_.seq = ++seq_;
  flight_.active = true;
  flight_.echo_done = class_.op != Op::send;
  if (endpoint_->timestamps()) flight_.started_ticks = device_->raw_clock();
  flight_.started = Clock::now();
  next_probe_ = flight_.started + class_.interval;
  if (Status s = endpoint_->post(flight_.seq, remote_); !s) {
    return fail_verbs(reason::qp_error, s.error());
  }
  stats_->sent();
  deadline_.expires_after(class_.timeout);
  deadline_.async_wait(guarded([this](const boost::system::error_code& ec) {
    if (!ec) probe_timed_out();
  }));
  spin();
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
  if (Status s = endpoint_->arm(); !s) return fail(reason::qp_error, s.error().message);
  // A completion that arrived before arming raises no event: look again.
  if (drain()) return complete();
  if (gen != generation_) return;
  channel_->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                       guarded([this](const boost::system::error_code& ec) {
                         if (ec) return;
                         endpoint_->consume_events();
                         const uint64_t g = generation_;
                         if (drain()) return complete();
                         if (g == generation_) wait_for_completion();
                       }));
}

bool Prober::drain() {
  std::array<Completion, 8> wc;
  for (;;) {
    auto n = endpoint_->poll(wc);
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
      if ((c.wr_id & Endpoint::kRecvTag) != 0) {
        if (Status s = endpoint_->post_recv(c.wr_id); !s) {
          fail(reason::qp_error, s.error().message);
          return false;
        }
        if (flight_.active && !flight_.echo_done) {
          flight_.echo_done = true;
          flight_.end_ticks = c.timestamp;
        }
      } else if (flight_.active && c.wr_id == flight_.seq) {
        flight_.op_done = true;
        if (class_.op != Op::send) flight_.end_ticks = c.timestamp;
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
    seconds =
        ticks_to_seconds(*flight_.end_ticks - *flight_.started_ticks, device_->core_clock_khz());
  }
  flight_.active = false;
  if (backoff_.count() != 0) {
    log::info("probe " + name_ + ": up again");
  }
  backoff_ = std::chrono::milliseconds(0);
  stats_->success(seconds, unix_now());
  timer_.expires_at(std::max(next_probe_, now));
  timer_.async_wait(guarded([this](const boost::system::error_code& ec) {
    if (!ec) probe();
  }));
}

void Prober::probe_timed_out() {
  stats_->timeout();
  if (backoff_.count() == 0) {
    log::warn("probe " + name_ + ": no completion within " +
              std::to_string(class_.timeout.count()) + " ms; setting the session up again");
  }
  teardown();
  schedule_reconnect();
}

void Prober::fail(const char* why, const std::string& detail) {
  stats_->error(why);
  if (backoff_.count() == 0) {
    log::warn("probe " + name_ + ": " + why + ": " + detail);
  } else {
    log::debug("probe " + name_ + ": " + why + ": " + detail);
  }
  teardown();
  schedule_reconnect();
}

void Prober::fail_verbs(const char* why, const Error& error) {
  const bool suspect = error.code == EIO || error.code == ENODEV;
  fail(why, error.message);
  if (suspect && settings_.device_suspect) settings_.device_suspect();
}

void Prober::teardown() {
  ++generation_;
  flight_.active = false;
  timer_.cancel();
  deadline_.cancel();
  keepalive_.cancel();
  resolver_.cancel();
  if (control_) {
    control_->close();
    control_.reset();
  }
  if (channel_) {
    channel_->cancel();
    channel_->release();  // the completion channel owns the descriptor
    channel_.reset();
  }
  endpoint_.reset();
}

void Prober::schedule_reconnect() {
  if (stopped_) return;
  backoff_ = backoff_.count() == 0 ? settings_.backoff_initial
                                   : std::min(settings_.backoff_max, backoff_ * 2);
  std::uniform_real_distribution<double> jitter(0.8, 1.2);
  const auto wait = std::chrono::milliseconds(
      static_cast<long long>(static_cast<double>(backoff_.count()) * jitter(rng_)));
  timer_.expires_after(wait);
  timer_.async_wait(guarded([this](const boost::system::error_code& ec) {
    if (!ec) connect();
  }));
}

}  // namespace rdma_exporter::probe
