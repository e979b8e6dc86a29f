#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/backoff.hpp"
#include "exporter/probe/control/channel.hpp"
#include "exporter/probe/stats/stats.hpp"
#include "exporter/probe/wire/auth.hpp"

namespace rdma_exporter::probe {

struct ProberSettings {
  std::chrono::milliseconds connect_timeout{3000};
  std::chrono::milliseconds backoff_initial{500};
  std::chrono::milliseconds backoff_max{30000};
  std::chrono::milliseconds keepalive{10000};
  // The secrets this host proves and requires responders to prove (shared
  // with the responder, rotated in place on reload); null or empty: no
  // authentication.
  std::shared_ptr<const Keyring> keyring;
  std::string memory = "host";
  int gid_index = -1;  // default for classes that name none; -1: the port's default GID
  // Called when verbs fail in a way that says the local device may be gone
  // (EIO, ENODEV), so the device list is looked at again at once.
  std::function<void()> device_suspect;
  // The event loop's stalls: an RC probe one touched counts as invalid
  // (UD probers have theirs in UdProberStats). None: never.
  std::shared_ptr<StallWatch> stalls;
};

// The prober's end of a control connection to one port of a target, shared
// by the RC and UD probers: connects, reads the hello and checks that the
// target still has the port, lets the prober send its set-up, reads the
// answer, then keeps the connection alive until the session fails. Any
// failure tears the session down and sets it up again after a backoff with
// jitter, so a restarted peer is picked up again by itself.
class ControlClient : public std::enable_shared_from_this<ControlClient> {
 public:
  virtual ~ControlClient() = default;
  ControlClient(const ControlClient&) = delete;
  ControlClient& operator=(const ControlClient&) = delete;

  void start();
  void stop();
  // Ends an established session whose set-up the keyring would not make
  // now: signed with a secret it no longer holds (a rotation's grace period
  // ended, or the secret was removed), or without one while it has one. It
  // is set up again after the backoff, with the keyring in force.
  void recheck_secret();

 protected:
  using Clock = std::chrono::steady_clock;

  ControlClient(boost::asio::io_context& io, std::string address, wire::PortAd remote,
                std::string name, ProberSettings settings, std::shared_ptr<SeriesStats> stats);

  // The hello listed the remote port: make the session's queue pair and
  // send_setup().
  virtual void on_hello() = 0;
  // The responder accepted (an Accept or a UdAccept): start probing, after
  // established().
  virtual void on_accept(const wire::Message& answer) = 0;
  // Free what the session holds; the connection is closed by the caller.
  virtual void on_teardown() = 0;

  // Fills in the prober's nonce, the address dialled and the MAC, then
  // sends the set-up.
  void send_setup(wire::Setup setup);
  void send_setup(wire::UdSetup setup);
  // The session is up: the connect deadline ends, keep-alives start and the
  // connection is watched for the responder closing it.
  void established();
  void fail(const char* why, const std::string& detail);
  // fail(), and a word to the service when `error` says the device may be gone.
  void fail_verbs(const char* why, const Error& error);
  void teardown();
  void schedule_reconnect();
  // A success after failures: says so once and resets the backoff.
  void recovered();
  // Runs `fn` only if the session was not torn down in between.
  template <typename Fn>
  auto guarded(Fn fn) {
    return
        [self = shared_from_this(), gen = generation_, fn = std::move(fn)](auto&&... args) mutable {
          if (self->stopped_ || gen != self->generation_) return;
          fn(std::forward<decltype(args)>(args)...);
        };
  }

  boost::asio::io_context& io_;
  const std::string address_;
  const wire::PortAd remote_port_;
  const std::string name_;  // in log lines: address, local and remote port, class
  const ProberSettings settings_;
  const std::shared_ptr<SeriesStats> stats_;
  wire::Hello hello_;
  boost::asio::steady_timer timer_;     // next probe or reconnect
  boost::asio::steady_timer deadline_;  // connect, set-up or probe timeout
  uint64_t generation_ = 0;             // bumped by every teardown
  bool stopped_ = false;
  Backoff backoff_;

 private:
  void connect();
  void on_hello_message(Result<wire::Message> msg);
  void on_answer(Result<wire::Message> msg);
  template <typename S>
  void sign_and_send(S setup);
  // The secrets in force (none when the settings have no keyring).
  const Keyring& keyring() const;
  // With a secret: the accept's MAC proves the responder holds one of the
  // secrets signed with; that one becomes the session's.
  bool accept_authentic(const wire::Message& answer);
  void watch_control();
  void send_keepalive();

  boost::asio::ip::tcp::resolver resolver_;
  std::shared_ptr<ControlChannel> control_;
  wire::Dialled dialled_;              // the responder's address as connected to
  std::vector<std::string> signing_;   // the secrets the set-up is signed with
  std::vector<Mac> setup_macs_;        // its MACs, one per secret in signing_
  std::optional<std::string> secret_;  // the one the responder proved: the session's
  bool established_ = false;
  boost::asio::steady_timer keepalive_;
};

}  // namespace rdma_exporter::probe
