#pragma once

// The responder's session, for responder.cpp and session.cpp only.

#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>
#include <string>

#include "exporter/probe/control/channel.hpp"
#include "exporter/probe/control/responder.hpp"
#include "exporter/probe/ud/port.hpp"
#include "exporter/probe/verbs/borrowed_fd.hpp"

namespace rdma_exporter::probe {

// How a session ends, and what is counted for it.
enum class SessionEnd : uint8_t {
  left,               // the prober left, or its queue pair or connection failed
  idle,               // silent past the idle timeout
  answered,           // a reject was sent (and counted when it was)
  handshake_timeout,  // no set-up before the handshake timeout
  handshake_evicted,  // made room for a newer handshake
  retired_secret,     // set up with a secret the keyring no longer accepts
  protocol,           // a malformed or unexpected message after the set-up
  backlog,            // keep-alives sent faster than the answers are read
};

// One prober's session: hello, set-up, then keep-alives until the prober
// leaves or stays silent longer than the idle timeout.
class Responder::Session : public std::enable_shared_from_this<Session> {
 public:
  using End = SessionEnd;

  Session(Responder& owner, boost::asio::ip::tcp::socket socket, SourceTable::Ticket ticket);

  SourceTable::Ticket ticket() const { return ticket_; }
  const Device* device() const { return device_.get(); }
  const std::optional<std::string>& secret() const { return secret_; }
  // Its set-up passed authentication (with the secret above, or none when
  // the responder had none); false during the handshake.
  bool set_up() const { return set_up_; }
  const UdPort* ud() const { return ud_.get(); }

  // Sends the hello and waits for the set-up.
  void start();
  // Ends the session once: its resources are freed, the responder told.
  void close(End end);

 private:
  void arm_deadline(std::chrono::milliseconds after, End end);
  // Says why, counted as `counted_as`, then closes.
  void reject(wire::RejectCode code, const std::string& reason, const char* counted_as);
  void on_setup(Result<wire::Message> m);
  void on_rc_setup(const wire::Setup& setup);
  void on_ud_setup(const wire::UdSetup& setup);
  // The checks both set-ups pass: authentication and a session slot, then
  // a port with the device and number or the rail the set-up names. Each
  // rejects and returns false or null when it fails.
  template <typename S>
  bool admitted(const S& setup);
  template <typename S>
  const LocalPort* port_for(const S& setup);
  template <typename S>
  bool authenticated(const S& setup);
  const LocalPort* find_port(const std::string& device, uint8_t port, const std::string& rail);
  // Sends the accept (with its MAC over the set-up's) and serves keep-alives.
  template <typename A>
  void accept(A accept);
  void listen();
  // Answers every received message with one of the same size.
  void echo();

  Responder& owner_;
  std::shared_ptr<ControlChannel> control_;
  const SourceTable::Ticket ticket_;  // its place in the responder's source table
  const wire::Dialled local_;         // the address and port the prober reached
  boost::asio::steady_timer deadline_;
  Nonce nonce_{};
  std::optional<std::string> secret_;  // the secret the set-up was made with
  Mac setup_mac_{};                    // the set-up's MAC that secret made
  bool set_up_ = false;
  std::shared_ptr<Device> device_;
  std::unique_ptr<Endpoint> endpoint_;
  BorrowedFd channel_;          // the endpoint's completion channel
  std::shared_ptr<UdPort> ud_;  // a UD session: admitted to this port's queue pair
  uint64_t ud_admission_ = 0;   // its id at ud_
  uint64_t pinned_ = 0;         // an RC session's buffer, counted at the responder
  bool closed_ = false;
};

}  // namespace rdma_exporter::probe
