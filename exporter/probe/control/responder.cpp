#include "exporter/probe/control/responder.hpp"

#include <algorithm>
#include <boost/asio/steady_timer.hpp>

#include "common/address.hpp"
#include "common/log.hpp"
#include "exporter/probe/control/channel.hpp"
#include "exporter/probe/control/session.hpp"

namespace rdma_exporter::probe {

using boost::asio::ip::tcp;

Responder::Responder(boost::asio::io_context& io, ResponderSettings settings,
                     std::shared_ptr<ProbeStats> stats)
    : io_(io),
      settings_(std::move(settings)),
      stats_(std::move(stats)),
      acceptor_(io),
      sources_(settings_.limits),
      pinned_(settings_.limits.max_pinned_bytes) {}

Responder::~Responder() {
  stop();
}

Status Responder::start() {
  if (Status s = open_listener(acceptor_, settings_.listen_address); !s) {
    return Error{s.error().code, "probe responder: " + s.error().message};
  }
  accept();
  return ok_status();
}

void Responder::set_ports(std::vector<LocalPort> ports) {
  ports_ = std::move(ports);
  std::vector<std::shared_ptr<Session>> gone;
  for (const auto& entry : sessions_) {
    const std::shared_ptr<Session>& s = entry.second;
    if (s->device() == nullptr) continue;  // still in its handshake
    // A UD session also ends when its port's UD queue pair was made anew:
    // the prober must learn the new one.
    const bool kept = std::any_of(ports_.begin(), ports_.end(), [&](const LocalPort& p) {
      return p.device.get() == s->device() && (s->ud() == nullptr || s->ud() == p.ud.get());
    });
    if (!kept) gone.push_back(s);
  }
  for (const auto& s : gone) s->close(Session::End::left);
}

const Keyring& Responder::keyring() const {
  static const Keyring none;
  return settings_.keyring ? *settings_.keyring : none;
}

void Responder::retire_secrets() {
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::shared_ptr<Session>> gone;
  for (const auto& [ticket, s] : sessions_) {
    // A handshake meets the keyring in force at its set-up.
    if (!s->set_up()) continue;
    if (!keyring().still_accepts(s->secret(), now)) gone.push_back(s);
  }
  for (const auto& s : gone) s->close(Session::End::retired_secret);
}

unsigned short Responder::port() const {
  boost::system::error_code ec;
  return acceptor_.local_endpoint(ec).port();
}

bool Responder::loopback_only() const {
  boost::system::error_code ec;
  const auto ep = acceptor_.local_endpoint(ec);
  return !ec && ep.address().is_loopback();
}

void Responder::stop() {
  if (stopped_) return;
  stopped_ = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  const auto sessions = sessions_;
  for (const auto& [ticket, s] : sessions) s->close(Session::End::left);
}

void Responder::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
    if (stopped_) return;
    if (ec) {
      log::warn("probe responder: accept failed", {{"err", ec.message()}});
      auto timer = std::make_shared<boost::asio::steady_timer>(io_, std::chrono::milliseconds(100));
      timer->async_wait([this, timer](const boost::system::error_code& tec) {
        if (!tec && !stopped_) accept();
      });
      return;
    }
    admit(std::move(socket));
    accept();
  });
}

// Every connection starts as a handshake; a full handshake budget ends an
// older one to make room (SourceTable), so a prober's hello always goes out.
void Responder::admit(tcp::socket socket) {
  boost::system::error_code ec;
  const auto remote = socket.remote_endpoint(ec);
  if (ec) return;
  const SourceTable::Admission admission = sources_.open(source_group(remote.address()));
  if (admission.verdict == SourceTable::Verdict::rate) {
    return refuse(std::move(socket), wire::RejectCode::rate, "rate");
  }
  if (admission.verdict != SourceTable::Verdict::admitted) {
    return refuse(std::move(socket), wire::RejectCode::capacity, "capacity");
  }
  if (admission.evicted) {
    if (auto v = sessions_.find(*admission.evicted); v != sessions_.end()) {
      const auto evicted = v->second;
      evicted->close(Session::End::handshake_evicted);
    }
  }
  socket.set_option(tcp::no_delay(true), ec);
  auto session = std::make_shared<Session>(*this, std::move(socket), admission.ticket);
  sessions_.emplace(admission.ticket, session);
  stats_->responder_session_opened();
  session->start();
}

bool Responder::authenticated(const Session& session) {
  return sources_.authenticate(session.ticket());
}

void Responder::refuse(tcp::socket socket, wire::RejectCode code, const char* why) {
  stats_->responder_rejected(why);
  auto channel = std::make_shared<ControlChannel>(std::move(socket));
  // The write holds the channel until it completes; its handler must not,
  // or a write that never completes (the loop stopped) keeps both.
  channel->write(wire::Reject{code, std::string("refused: ") + why},
                 [weak = std::weak_ptr<ControlChannel>(channel)](const Status&) {
                   if (auto c = weak.lock()) c->close();
                 });
}

void Responder::closed(const std::shared_ptr<Session>& session, bool idle) {
  if (sessions_.erase(session->ticket()) == 0) return;
  stats_->responder_session_closed(idle);
  sources_.close(session->ticket());
}

}  // namespace rdma_exporter::probe
