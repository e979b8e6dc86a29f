#include "exporter/probe/control/session.hpp"

#include <algorithm>
#include <array>

#include "common/address.hpp"
#include "exporter/probe/wire/auth.hpp"

namespace rdma_exporter::probe {
namespace {

using End = SessionEnd;

// What a rejection ending is counted as; null for an ending that is not one.
const char* rejected_as(End end) {
  switch (end) {
    case End::handshake_timeout:
      return "handshake_timeout";
    case End::handshake_evicted:
      return "handshake_evicted";
    case End::retired_secret:
      return "retired_secret";
    case End::protocol:
      return "protocol";
    case End::backlog:
      return "backlog";
    case End::left:
    case End::idle:
    case End::answered:
      break;
  }
  return nullptr;
}

End keepalive_end(KeepaliveEnd end) {
  switch (end) {
    case KeepaliveEnd::protocol:
      return End::protocol;
    case KeepaliveEnd::backlog:
      return End::backlog;
    case KeepaliveEnd::closed:
      break;
  }
  return End::left;
}

}  // namespace

Responder::Session::Session(Responder& owner, boost::asio::ip::tcp::socket socket,
                            SourceTable::Ticket ticket)
    : owner_(owner),
      control_(std::make_shared<ControlChannel>(std::move(socket))),
      ticket_(ticket),
      local_(dialled_of(control_->socket(), Side::local)),
      deadline_(owner.io_) {}

void Responder::Session::start() {
  nonce_ = random_nonce();
  wire::Hello hello;
  hello.nonce = nonce_;
  hello.keys = static_cast<uint8_t>(owner_.keyring().count(std::chrono::steady_clock::now()));
  for (const auto& p : owner_.ports_) {
    if (hello.ports.size() == wire::kMaxPorts) break;
    hello.ports.push_back(p.ad());
  }
  arm_deadline(owner_.settings_.limits.handshake_timeout, End::handshake_timeout);
  control_->write(hello, [self = shared_from_this()](const Status& s) {
    if (!s) return self->close(End::left);
    self->control_->read([self](Result<wire::Message> m) { self->on_setup(std::move(m)); });
  });
}

void Responder::Session::close(End end) {
  if (closed_) return;
  closed_ = true;
  if (const char* counted = rejected_as(end)) owner_.stats_->responder_rejected(counted);
  deadline_.cancel();
  control_->close();
  channel_.reset();
  endpoint_.reset();
  owner_.pinned_.give(pinned_);
  pinned_ = 0;
  if (ud_) ud_->revoke(ud_admission_);
  ud_.reset();
  device_.reset();
  owner_.closed(shared_from_this(), end == End::idle);
}

void Responder::Session::arm_deadline(std::chrono::milliseconds after, End end) {
  deadline_.expires_after(after);
  deadline_.async_wait([self = shared_from_this(), end](const boost::system::error_code& ec) {
    if (ec || self->closed_) return;
    self->close(end);
  });
}

void Responder::Session::reject(wire::RejectCode code, const std::string& reason,
                                const char* counted_as) {
  if (closed_) return;
  owner_.stats_->responder_rejected(counted_as);
  control_->write(wire::Reject{code, reason},
                  [self = shared_from_this()](const Status&) { self->close(End::answered); });
}

void Responder::Session::on_setup(Result<wire::Message> m) {
  if (closed_) return;
  if (!m) {
    if (m.error().code == EPROTONOSUPPORT) {
      return reject(wire::RejectCode::version, m.error().message, "version");
    }
    if (is_protocol_error(m.error())) {
      return reject(wire::RejectCode::protocol, m.error().message, "protocol");
    }
    return close(End::left);
  }
  if (const auto* ud = std::get_if<wire::UdSetup>(&m.value())) return on_ud_setup(*ud);
  if (const auto* rc = std::get_if<wire::Setup>(&m.value())) return on_rc_setup(*rc);
  reject(wire::RejectCode::protocol, "expected a setup", "protocol");
}

template <typename S>
bool Responder::Session::admitted(const S& setup) {
  if (!authenticated(setup)) return false;
  if (owner_.authenticated(*this)) return true;
  reject(wire::RejectCode::capacity, "refused: capacity", "capacity");
  return false;
}

template <typename S>
const LocalPort* Responder::Session::port_for(const S& setup) {
  if (owner_.ports_.empty()) {
    reject(wire::RejectCode::resources, "no RDMA device", "resources");
    return nullptr;
  }
  return find_port(setup.device, setup.port, setup.rail);
}

// With a secret: the set-up's MAC is one of the keyring's secrets' over this
// session's nonce, and the set-up was made for the address it arrived at
// (not relayed from another responder). Rejects and returns false otherwise.
template <typename S>
bool Responder::Session::authenticated(const S& setup) {
  const Keyring& ring = owner_.keyring();
  if (ring.empty()) return set_up_ = true;
  const auto verified = ring.verify(nonce_, setup, std::chrono::steady_clock::now());
  if (!verified) {
    reject(wire::RejectCode::auth, "authentication failed", "auth");
    return false;
  }
  if (setup.dialled != local_) {
    reject(wire::RejectCode::auth, "the set-up was made for another address", "relayed");
    return false;
  }
  secret_ = *verified->secret;
  setup_mac_ = verified->mac;
  return set_up_ = true;
}

const LocalPort* Responder::Session::find_port(const std::string& device, uint8_t port,
                                               const std::string& rail) {
  for (const auto& p : owner_.ports_) {
    if (device.empty() ? p.rail == rail : p.device->name() == device && p.info.port == port) {
      return &p;
    }
  }
  reject(
      wire::RejectCode::unsupported,
      device.empty() ? "no port on rail " + rail : "no port " + device + "/" + std::to_string(port),
      "unsupported");
  return nullptr;
}

void Responder::Session::on_rc_setup(const wire::Setup& setup) {
  const ResponderSettings& cfg = owner_.settings_;
  if (!admitted(setup)) return;
  if (setup.size > cfg.limits.max_message_size) {
    return reject(wire::RejectCode::unsupported,
                  "message size above " + std::to_string(cfg.limits.max_message_size),
                  "unsupported");
  }
  const LocalPort* local = port_for(setup);
  if (local == nullptr) return;
  if (!owner_.pinned_.take(setup.size)) {
    return reject(wire::RejectCode::capacity,
                  "refused: the responder's RC buffers would pass probe.max_pinned_bytes",
                  "memory");
  }
  pinned_ = setup.size;
  device_ = local->device;
  auto port = cfg.gid_index < 0 ? Result<PortInfo>(local->info)
                                : device_->port(local->info.port, cfg.gid_index);
  if (!port) return reject(wire::RejectCode::resources, port.error().message, "resources");
  const QpParams& qp = setup;
  const OpRow& row = *find_op(qp.op);
  const EndpointConfig config{qp, *port, row.responder_recv_depth, cfg.memory, Role::responder};
  auto endpoint = Endpoint::create(device_, config);
  if (!endpoint) {
    return reject(wire::RejectCode::resources, endpoint.error().message, "resources");
  }
  endpoint_ = std::move(endpoint.value());
  if (Status s = endpoint_->connect(setup.peer); !s) {
    return reject(wire::RejectCode::resources, s.error().message, "resources");
  }
  if (row.echo) {
    channel_.emplace(owner_.io_, endpoint_->channel_fd());
    echo();
  }
  wire::Accept a;
  a.peer = endpoint_->local();
  accept(a);
}

// A UD set-up admits the prober's UD queue pair to the port's: no queue
// pair is made for the session.
void Responder::Session::on_ud_setup(const wire::UdSetup& setup) {
  if (!admitted(setup)) return;
  const LocalPort* local = port_for(setup);
  if (local == nullptr) return;
  if (!local->ud || !local->ud->working()) {
    return reject(wire::RejectCode::resources, "no UD queue pair on " + local->name(), "resources");
  }
  if (setup.size > local->ud->max_size()) {
    return reject(wire::RejectCode::unsupported,
                  "datagram size above " + std::to_string(local->ud->max_size()), "unsupported");
  }
  // Replies at about the rate the prober's class sends at, never faster
  // than the responder's own floor.
  const auto admission = local->ud->admit(setup.peer, setup.sl, setup.tclass,
                                          std::max(owner_.settings_.limits.ud_min_interval,
                                                   std::chrono::milliseconds(setup.interval_ms)));
  if (!admission) {
    return reject(wire::RejectCode::capacity, "too many UD sessions of one queue pair", "capacity");
  }
  device_ = local->device;
  ud_ = local->ud;
  ud_admission_ = *admission;
  wire::UdAccept a;
  a.peer = ud_->address();
  accept(a);
}

template <typename A>
void Responder::Session::accept(A accept) {
  if (secret_) accept.mac = accept_mac(*secret_, setup_mac_, accept);
  control_->write(accept, [self = shared_from_this()](const Status& s) {
    if (!s) return self->close(End::left);
    self->listen();
  });
}

// Keep-alives reset the idle deadline; anything else ends the session, and
// so does a prober that sends keep-alives without reading the answers.
void Responder::Session::listen() {
  if (closed_) return;
  arm_deadline(owner_.settings_.limits.idle_timeout, End::idle);
  serve_keepalives(
      control_,
      [self = shared_from_this()] {
        if (!self->closed_)
          self->arm_deadline(self->owner_.settings_.limits.idle_timeout, End::idle);
      },
      [self = shared_from_this()](KeepaliveEnd end) { self->close(keepalive_end(end)); });
}

void Responder::Session::echo() {
  if (closed_) return;
  std::array<Completion, 16> wc;
  for (;;) {
    auto n = endpoint_->poll(wc);
    if (!n) return close(End::left);
    if (*n == 0) break;
    for (std::size_t i = 0; i < *n; ++i) {
      // An error means the prober's queue pair went away: the session ends.
      if (wc[i].status != IBV_WC_SUCCESS) return close(End::left);
      if ((wc[i].wr_id & Endpoint::kRecvTag) == 0) continue;  // our echo was sent
      if (!endpoint_->post_recv(wc[i].wr_id) || !endpoint_->post_send(0)) {
        return close(End::left);
      }
    }
  }
  if (!endpoint_->arm()) return close(End::left);
  channel_->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                       [self = shared_from_this()](const boost::system::error_code& ec) {
                         if (ec || self->closed_) return;
                         self->endpoint_->consume_events();
                         self->echo();
                       });
}

}  // namespace rdma_exporter::probe
