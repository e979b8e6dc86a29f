#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "exporter/probe/control/admission.hpp"
#include "exporter/probe/local_ports/local_port.hpp"
#include "exporter/probe/plan/limits.hpp"
#include "exporter/probe/stats/stats.hpp"
#include "exporter/probe/verbs/endpoint.hpp"
#include "exporter/probe/wire/auth.hpp"

namespace rdma_exporter::probe {

struct ResponderSettings {
  std::string listen_address = ":10911";
  ResponderLimits limits;  // ProbeOptions::responder
  // The secrets peers prove (shared with this exporter's probers, rotated
  // in place on reload); null or empty: peers need not authenticate.
  std::shared_ptr<const Keyring> keyring;
  std::string memory = "host";
  int gid_index = -1;  // -1: each port's default GID
};

// Answers probers on every local port the probe uses: accepts control
// connections on one TCP port, lists the local ports in its hello, sets up
// one RC queue pair per session on the port the set-up names, echoes sends, and leaves one-sided
// writes and reads to the hardware. What a peer can make it allocate is bounded: handshakes
// (connections not authenticated yet) and sessions, each in all and per source group,
// connections per minute per source group, and message size (SourceTable).
class Responder {
 public:
  Responder(boost::asio::io_context& io, ResponderSettings settings,
            std::shared_ptr<ProbeStats> stats);
  ~Responder();

  Status start();
  void stop();
  // The ports sessions are made on. Sessions on a device that is no longer
  // among them are closed at once, so the device can be released. Until
  // there is a port, set-ups are refused with "resources".
  void set_ports(std::vector<LocalPort> ports);
  unsigned short port() const;
  // Whether the control port is bound to a loopback address only.
  bool loopback_only() const;
  // Closes the sessions whose set-up the keyring would refuse now: made
  // with a secret it no longer accepts (a rotation's grace period ended, or
  // the secret was removed), or without one while it has one (a secret was
  // turned on).
  void retire_secrets();
  std::size_t sessions() const { return sessions_.size(); }
  // Bytes the RC sessions' buffers register now.
  uint64_t pinned() const { return pinned_.held(); }
  // Handshakes and authenticated sessions, by source group.
  const SourceTable& admissions() const { return sources_; }

 private:
  class Session;

  void accept();
  void admit(boost::asio::ip::tcp::socket socket);
  void refuse(boost::asio::ip::tcp::socket socket, wire::RejectCode code, const char* why);
  // The session's set-up was authenticated: it takes a session slot. False
  // when the session caps are reached (the session is then refused).
  bool authenticated(const Session& session);
  void closed(const std::shared_ptr<Session>& session, bool idle);

  const Keyring& keyring() const;

  boost::asio::io_context& io_;
  const ResponderSettings settings_;
  std::shared_ptr<ProbeStats> stats_;
  std::vector<LocalPort> ports_;
  boost::asio::ip::tcp::acceptor acceptor_;
  SourceTable sources_;
  // Every connection the responder holds, by its ticket in sources_.
  std::map<SourceTable::Ticket, std::shared_ptr<Session>> sessions_;
  PinBudget pinned_;  // what the RC sessions' buffers register
  bool stopped_ = false;
};

}  // namespace rdma_exporter::probe
