#include "exporter/probe/control/client.hpp"

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/error.hpp>

#include "common/address.hpp"
#include "common/log.hpp"

namespace rdma_exporter::probe {
namespace {

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

const char* read_failure(const Error& e) {
  return is_protocol_error(e) ? reason::protocol : reason::disconnected;
}

// An accept's MAC, and the one `secret` makes over it and the set-up's MAC.
const Mac& mac_of(const wire::Message& answer) {
  if (const auto* a = std::get_if<wire::Accept>(&answer)) return a->mac;
  return std::get<wire::UdAccept>(answer).mac;
}

Mac accept_proof(const std::string& secret, const Mac& setup, const wire::Message& answer) {
  if (const auto* a = std::get_if<wire::Accept>(&answer)) return accept_mac(secret, setup, *a);
  return accept_mac(secret, setup, std::get<wire::UdAccept>(answer));
}

}  // namespace

ControlClient::ControlClient(boost::asio::io_context& io, std::string address, wire::PortAd remote,
                             std::string name, ProberSettings settings,
                             std::shared_ptr<SeriesStats> stats)
    : io_(io),
      address_(std::move(address)),
      remote_port_(std::move(remote)),
      name_(std::move(name)),
      settings_(std::move(settings)),
      stats_(std::move(stats)),
      timer_(io),
      deadline_(io),
      backoff_({settings_.backoff_initial, settings_.backoff_max}),
      resolver_(io),
      keepalive_(io) {}

void ControlClient::start() {
  connect();
}

void ControlClient::stop() {
  stopped_ = true;
  teardown();
}

void ControlClient::connect() {
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
              dialled_ = dialled_of(control_->socket(), Side::remote);
              control_->read(
                  guarded([this](Result<wire::Message> m) { on_hello_message(std::move(m)); }));
            }));
      }));
}

void ControlClient::on_hello_message(Result<wire::Message> msg) {
  if (!msg) return fail(read_failure(msg.error()), msg.error().message);
  const auto* hello = std::get_if<wire::Hello>(&msg.value());
  if (hello == nullptr) return fail(reason::protocol, "expected a hello");
  hello_ = *hello;
  secret_.reset();
  signing_.clear();
  const bool ours = settings_.keyring && !settings_.keyring->empty();
  if (hello_.auth_required() && !ours) {
    return fail(reason::auth, "the responder requires a shared secret (probe.secret_file)");
  }
  if (ours) {
    if (!hello_.auth_required()) {
      return fail(reason::auth,
                  "the responder has no shared secret, so it cannot prove who it is "
                  "(probe.secret_file is needed on both ends)");
    }
    for (const std::string* s : settings_.keyring->secrets(Clock::now())) signing_.push_back(*s);
  }
  const bool listed = std::any_of(hello_.ports.begin(), hello_.ports.end(), [&](const auto& p) {
    return p.device == remote_port_.device && p.port == remote_port_.port;
  });
  if (!listed) {
    return fail(reason::rejected, "the target no longer answers on " + remote_port_.device + "/" +
                                      std::to_string(remote_port_.port));
  }
  on_hello();
}

void ControlClient::send_setup(wire::Setup setup) {
  sign_and_send(std::move(setup));
}

void ControlClient::send_setup(wire::UdSetup setup) {
  sign_and_send(std::move(setup));
}

template <typename S>
void ControlClient::sign_and_send(S setup) {
  setup.nonce = random_nonce();
  setup.dialled = dialled_;
  // One MAC per secret held: the responder verifies whichever it shares.
  setup.macs.clear();
  for (const auto& secret : signing_) setup.macs.push_back(setup_mac(secret, hello_.nonce, setup));
  setup_macs_ = setup.macs;
  control_->write(
      setup, guarded([this](const Status& s) {
        if (!s) return fail(reason::disconnected, s.error().message);
        control_->read(guarded([this](Result<wire::Message> m) { on_answer(std::move(m)); }));
      }));
}

void ControlClient::on_answer(Result<wire::Message> msg) {
  if (!msg) return fail(read_failure(msg.error()), msg.error().message);
  if (const auto* reject = std::get_if<wire::Reject>(&msg.value())) {
    return fail(reject_reason(reject->code), std::string("responder refused (") +
                                                 wire::reject_code_name(reject->code) +
                                                 "): " + reject->reason);
  }
  if (!std::holds_alternative<wire::Accept>(msg.value()) &&
      !std::holds_alternative<wire::UdAccept>(msg.value())) {
    return fail(reason::protocol, "expected accept or reject");
  }
  if (!accept_authentic(msg.value())) {
    return fail(reason::auth, "the responder's accept does not prove the shared secret");
  }
  // A reload while the set-up was on its way: the session starts only under
  // the keyring in force.
  if (!keyring().still_accepts(secret_, Clock::now())) {
    return fail(reason::retired_secret, "the secrets changed while the session was set up");
  }
  on_accept(msg.value());
}

bool ControlClient::accept_authentic(const wire::Message& answer) {
  if (signing_.empty()) return true;
  for (std::size_t i = 0; i < signing_.size() && i < setup_macs_.size(); ++i) {
    if (mac_equal(accept_proof(signing_[i], setup_macs_[i], answer), mac_of(answer))) {
      secret_ = signing_[i];
      return true;
    }
  }
  return false;
}

const Keyring& ControlClient::keyring() const {
  static const Keyring none;
  return settings_.keyring ? *settings_.keyring : none;
}

void ControlClient::recheck_secret() {
  if (stopped_ || !established_) return;
  const Keyring& ring = keyring();
  if (ring.still_accepts(secret_, Clock::now())) return;
  fail(reason::retired_secret, secret_ ? "the session's secret was rotated out or removed"
                                       : "a shared secret was turned on; the session had none");
}

void ControlClient::established() {
  established_ = true;
  deadline_.cancel();
  log::debug("probe: session up", {{"target", name_}});
  watch_control();
  send_keepalive();
}

void ControlClient::watch_control() {
  control_->read(guarded([this](Result<wire::Message> m) {
    if (!m) return fail(read_failure(m.error()), m.error().message);
    if (std::holds_alternative<wire::Keepalive>(m.value())) return watch_control();
    if (const auto* reject = std::get_if<wire::Reject>(&m.value())) {
      return fail(reject_reason(reject->code),
                  std::string("responder closed the session: ") + reject->reason);
    }
    fail(reason::protocol, "unexpected message during a session");
  }));
}

void ControlClient::send_keepalive() {
  keepalive_.expires_after(settings_.keepalive);
  keepalive_.async_wait(guarded([this](const boost::system::error_code& ec) {
    if (ec) return;
    control_->write(wire::Keepalive{}, guarded([this](const Status& s) {
                      if (!s) return fail(reason::disconnected, s.error().message);
                      send_keepalive();
                    }));
  }));
}

void ControlClient::recovered() {
  if (backoff_.succeeded()) log::info("probe: session up again", {{"target", name_}});
}

void ControlClient::fail(const char* why, const std::string& detail) {
  stats_->error(why);
  if (backoff_.failures() == 0) {
    log::warn("probe: session failed", {{"target", name_}, {"reason", why}, {"err", detail}});
  } else {
    log::debug("probe: session failed", {{"target", name_}, {"reason", why}, {"err", detail}});
  }
  teardown();
  schedule_reconnect();
}

void ControlClient::fail_verbs(const char* why, const Error& error) {
  const bool suspect = error.code == EIO || error.code == ENODEV;
  fail(why, error.message);
  if (suspect && settings_.device_suspect) settings_.device_suspect();
}

void ControlClient::teardown() {
  ++generation_;
  established_ = false;
  timer_.cancel();
  deadline_.cancel();
  keepalive_.cancel();
  resolver_.cancel();
  if (control_) {
    control_->close();
    control_.reset();
  }
  on_teardown();
}

void ControlClient::schedule_reconnect() {
  if (stopped_) return;
  timer_.expires_after(backoff_.failed());
  timer_.async_wait(guarded([this](const boost::system::error_code& ec) {
    if (!ec) connect();
  }));
}

}  // namespace rdma_exporter::probe
