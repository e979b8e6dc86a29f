#include "collectors/probe/control/responder.hpp"

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <optional>

#include "collectors/probe/control/channel.hpp"
#include "collectors/probe/ud/port.hpp"
#include "collectors/probe/verbs/borrowed_fd.hpp"
#include "collectors/probe/wire/auth.hpp"
#include "common/address.hpp"
#include "common/log.hpp"

namespace rdma_exporter::probe {

using boost::asio::ip::tcp;

namespace {
constexpr uint32_t kEchoRecvDepth = 16;

}  // namespace

// One prober's session: hello, set-up, then keep-alives until the prober
// leaves or stays silent longer than the idle timeout.
class Responder::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Responder& owner, tcp::socket socket, SourceTable::Ticket ticket)
      : owner_(owner),
        control_(std::make_shared<ControlChannel>(std::move(socket))),
        ticket_(ticket),
        local_(dialled_of(control_->socket(), Side::local)),
        deadline_(owner.io_) {}

  SourceTable::Ticket ticket() const { return ticket_; }
  const Device* device() const { return device_.get(); }
  const std::optional<std::string>& secret() const { return secret_; }
  const UdPort* ud() const { return ud_.get(); }

  void start() {
    nonce_ = random_nonce();
    wire::Hello hello;
    hello.nonce = nonce_;
    hello.keys = owner_.keyring().keys(std::chrono::steady_clock::now());
    for (const auto& p : owner_.ports_) {
      if (hello.ports.size() == wire::kMaxPorts) break;
      hello.ports.push_back(p.ad());
    }
    arm_deadline(owner_.settings_.limits.handshake_timeout, "handshake_timeout");
    control_->write(hello, [self = shared_from_this()](Status s) {
      if (!s) return self->close(nullptr);
      self->control_->read([self](Result<wire::Message> m) { self->on_setup(std::move(m)); });
    });
  }

  void close(const char* rejected, bool idle = false) {
    if (closed_) return;
    closed_ = true;
    if (rejected) owner_.stats_->responder_rejected(rejected);
    deadline_.cancel();
    control_->close();
    channel_.reset();
    endpoint_.reset();
    if (ud_) ud_->revoke(ud_admission_);
    ud_.reset();
    device_.reset();
    owner_.closed(shared_from_this(), idle);
  }

 private:
  void arm_deadline(std::chrono::milliseconds after, const char* why) {
    deadline_.expires_after(after);
    deadline_.async_wait([self = shared_from_this(), why](const boost::system::error_code& ec) {
      if (ec || self->closed_) return;
      const bool idle = std::string(why) == "idle";
      self->close(idle ? nullptr : why, idle);
    });
  }

  // An authenticated set-up over the session caps.
  void reject_capacity() { reject(wire::RejectCode::capacity, "refused: capacity", "capacity"); }

  // Says why, then closes.
  void reject(wire::RejectCode code, const std::string& reason, const char* counted_as) {
    if (closed_) return;
    wire::Reject r{code, reason};
    owner_.stats_->responder_rejected(counted_as);
    control_->write(r, [self = shared_from_this()](Status) { self->close(nullptr); });
  }

  void on_setup(Result<wire::Message> m) {
    if (closed_) return;
    if (!m) {
      if (m.error().code == EPROTONOSUPPORT) {
        return reject(wire::RejectCode::version, m.error().message, "version");
      }
      if (is_protocol_error(m.error())) {
        return reject(wire::RejectCode::protocol, m.error().message, "protocol");
      }
      return close(nullptr);
    }
    if (const auto* ud = std::get_if<wire::UdSetup>(&m.value())) return on_ud_setup(*ud);
    const auto* setup = std::get_if<wire::Setup>(&m.value());
    if (setup == nullptr) {
      return reject(wire::RejectCode::protocol, "expected a setup", "protocol");
    }
    const ResponderSettings& cfg = owner_.settings_;
    if (!authenticated(*setup)) return;
    if (!owner_.authenticated(*this)) return reject_capacity();
    if (setup->size > cfg.limits.max_message_size) {
      return reject(wire::RejectCode::unsupported,
                    "message size above " + std::to_string(cfg.limits.max_message_size),
                    "unsupported");
    }
    if (owner_.ports_.empty()) {
      return reject(wire::RejectCode::resources, "no RDMA device", "resources");
    }
    const LocalPort* local = find_port(setup->device, setup->port, setup->rail);
    if (local == nullptr) return;
    device_ = local->device;
    auto port = cfg.gid_index < 0 ? Result<PortInfo>(local->info)
                                  : device_->port(local->info.port, cfg.gid_index);
    if (!port) return reject(wire::RejectCode::resources, port.error().message, "resources");
    const QpParams& qp = *setup;
    const EndpointConfig config{qp, *port, qp.op == Op::send ? kEchoRecvDepth : 0, cfg.memory,
                                Role::responder};
    auto endpoint = Endpoint::create(device_, config);
    if (!endpoint) {
      return reject(wire::RejectCode::resources, endpoint.error().message, "resources");
    }
    endpoint_ = std::move(endpoint.value());
    if (Status s = endpoint_->connect(setup->peer); !s) {
      return reject(wire::RejectCode::resources, s.error().message, "resources");
    }
    if (setup->op == Op::send) {
      channel_.emplace(owner_.io_, endpoint_->channel_fd());
      echo();
    }
    wire::Accept accept;
    accept.peer = endpoint_->local();
    if (secret_) accept.mac = accept_mac(*secret_, setup->mac, accept);
    control_->write(accept, [self = shared_from_this()](Status s) {
      if (!s) return self->close(nullptr);
      self->listen();
    });
  }

  // With a secret: the set-up's MAC is one of the keyring's secrets' over
  // this session's nonce, and the set-up was made for the address it
  // arrived at (not relayed from another responder). Rejects and returns
  // false otherwise.
  template <typename S>
  bool authenticated(const S& setup) {
    const Keyring& ring = owner_.keyring();
    if (ring.empty()) return true;
    const std::string* secret = ring.verify(nonce_, setup, std::chrono::steady_clock::now());
    if (secret == nullptr) {
      reject(wire::RejectCode::auth, "authentication failed", "auth");
      return false;
    }
    if (setup.dialled != local_) {
      reject(wire::RejectCode::auth, "the set-up was made for another address", "relayed");
      return false;
    }
    secret_ = *secret;
    return true;
  }

  // The port a set-up names (by device and port, or by rail); rejects and
  // returns null when there is none.
  const LocalPort* find_port(const std::string& device, uint8_t port, const std::string& rail) {
    for (const auto& p : owner_.ports_) {
      if (device.empty() ? p.rail == rail : p.device->name() == device && p.info.port == port) {
        return &p;
      }
    }
    reject(wire::RejectCode::unsupported,
           device.empty() ? "no port on rail " + rail
                          : "no port " + device + "/" + std::to_string(port),
           "unsupported");
    return nullptr;
  }

  // A UD set-up admits the prober's UD queue pair to the port's: no queue
  // pair is made for the session.
  void on_ud_setup(const wire::UdSetup& setup) {
    if (!authenticated(setup)) return;
    if (!owner_.authenticated(*this)) return reject_capacity();
    if (owner_.ports_.empty()) {
      return reject(wire::RejectCode::resources, "no RDMA device", "resources");
    }
    const LocalPort* local = find_port(setup.device, setup.port, setup.rail);
    if (local == nullptr) return;
    if (!local->ud || !local->ud->working()) {
      return reject(wire::RejectCode::resources, "no UD queue pair on " + local->name(),
                    "resources");
    }
    if (setup.size > local->ud->max_size()) {
      return reject(wire::RejectCode::unsupported,
                    "datagram size above " + std::to_string(local->ud->max_size()), "unsupported");
    }
    // Replies at about the rate the prober's class sends at.
    const auto admission = local->ud->admit(
        setup.peer, setup.sl, setup.tclass,
        std::max(kFastestUdInterval, std::chrono::milliseconds(setup.interval_ms)));
    if (!admission) {
      return reject(wire::RejectCode::capacity, "too many UD sessions of one queue pair",
                    "capacity");
    }
    device_ = local->device;
    ud_ = local->ud;
    ud_admission_ = *admission;
    wire::UdAccept accept;
    accept.peer = ud_->address();
    if (secret_) accept.mac = accept_mac(*secret_, setup.mac, accept);
    control_->write(accept, [self = shared_from_this()](Status s) {
      if (!s) return self->close(nullptr);
      self->listen();
    });
  }

  // Keep-alives reset the idle deadline; anything else ends the session, and
  // so does a prober that sends keep-alives without reading the answers.
  void listen() {
    if (closed_) return;
    arm_deadline(owner_.settings_.limits.idle_timeout, "idle");
    serve_keepalives(
        control_,
        [self = shared_from_this()] {
          if (!self->closed_)
            self->arm_deadline(self->owner_.settings_.limits.idle_timeout, "idle");
        },
        [self = shared_from_this()](const char* why) {
          self->close(std::string(why) == "closed" ? nullptr : why);
        });
  }

  // Answers every received message with one of the same size.
  void echo() {
    if (closed_) return;
    std::array<Completion, 16> wc;
    for (;;) {
      auto n = endpoint_->poll(wc);
      if (!n) return close(nullptr);
      if (*n == 0) break;
      for (std::size_t i = 0; i < *n; ++i) {
        // An error means the prober's queue pair went away: the session ends.
        if (wc[i].status != IBV_WC_SUCCESS) return close(nullptr);
        if ((wc[i].wr_id & Endpoint::kRecvTag) == 0) continue;  // our echo was sent
        if (!endpoint_->post_recv(wc[i].wr_id) || !endpoint_->post_send(0)) {
          return close(nullptr);
        }
      }
    }
    if (!endpoint_->arm()) return close(nullptr);
    channel_->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                         [self = shared_from_this()](const boost::system::error_code& ec) {
                           if (ec || self->closed_) return;
                           self->endpoint_->consume_events();
                           self->echo();
                         });
  }

  Responder& owner_;
  std::shared_ptr<ControlChannel> control_;
  const SourceTable::Ticket ticket_;  // its place in the responder's source table
  const wire::Dialled local_;         // the address and port the prober reached
  boost::asio::steady_timer deadline_;
  Nonce nonce_{};
  std::optional<std::string> secret_;  // the secret the set-up was made with
  std::shared_ptr<Device> device_;
  std::unique_ptr<Endpoint> endpoint_;
  BorrowedFd channel_;          // the endpoint's completion channel
  std::shared_ptr<UdPort> ud_;  // a UD session: admitted to this port's queue pair
  uint64_t ud_admission_ = 0;   // its id at ud_
  bool closed_ = false;
};

Responder::Responder(boost::asio::io_context& io, ResponderSettings settings,
                     std::shared_ptr<ProbeStats> stats)
    : io_(io),
      settings_(std::move(settings)),
      stats_(std::move(stats)),
      acceptor_(io),
      sources_(settings_.limits) {}

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
  for (const auto& s : gone) s->close(nullptr);
}

const Keyring& Responder::keyring() const {
  static const Keyring none;
  return settings_.keyring ? *settings_.keyring : none;
}

void Responder::retire_secrets() {
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::shared_ptr<Session>> gone;
  for (const auto& [ticket, s] : sessions_) {
    if (s->secret() && !keyring().accepts(*s->secret(), now)) gone.push_back(s);
  }
  for (const auto& s : gone) s->close("retired_secret");
}

unsigned short Responder::port() const {
  boost::system::error_code ec;
  return acceptor_.local_endpoint(ec).port();
}

void Responder::stop() {
  if (stopped_) return;
  stopped_ = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  const auto sessions = sessions_;
  for (const auto& [ticket, s] : sessions) s->close(nullptr);
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
      evicted->close("handshake_evicted");
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
                 [weak = std::weak_ptr<ControlChannel>(channel)](Status) {
                   if (auto c = weak.lock()) c->close();
                 });
}

void Responder::closed(const std::shared_ptr<Session>& session, bool idle) {
  if (sessions_.erase(session->ticket()) == 0) return;
  stats_->responder_session_closed(idle);
  sources_.close(session->ticket());
}

}  // namespace rdma_exporter::probe
