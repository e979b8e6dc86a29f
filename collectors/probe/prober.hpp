#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "collectors/probe/control.hpp"
#include "collectors/probe/local_port.hpp"
#include "collectors/probe/options.hpp"
#include "collectors/probe/stats.hpp"
#include "collectors/probe/verbs_endpoint.hpp"

namespace rdma_exporter::probe {

struct ProberSettings {
  std::chrono::milliseconds connect_timeout{3000};
  std::chrono::milliseconds backoff_initial{500};
  std::chrono::milliseconds backoff_max{30000};
  std::chrono::milliseconds keepalive{10000};
  std::string secret;  // empty: no authentication
  std::string memory = "host";
  int gid_index = -1;  // default for classes that name none; -1: the port's default GID
  // Called when verbs fail in a way that says the local device may be gone
  // (EIO, ENODEV), so the device list is looked at again at once.
  std::function<void()> device_suspect;
};

// Probes one port of a target from one local port with one class, for as
// long as it runs: connects the control channel, checks that the target still
// has that port, sets up a pair of RC queue pairs with the responder, then
// posts one probe per interval and times it. Any failure tears the session
// down and sets it up again after a backoff with jitter, so a restarted peer
// is picked up again by itself.
class Prober : public std::enable_shared_from_this<Prober> {
 public:
  Prober(boost::asio::io_context& io, LocalPort local, std::string address, wire::PortAd remote,
         ProbeClass cls, ProberSettings settings, std::shared_ptr<SeriesStats> stats);

  void start();
  void stop();

 private:
  using Clock = std::chrono::steady_clock;

  void connect();
  void on_hello(Result<wire::Message> msg);
  void on_answer(Result<wire::Message> msg);
  void running();
  void watch_control();
  void send_keepalive();

  void probe();
  void spin();
  void wait_for_completion();
  // Handles what the CQ holds; true when the probe in flight is complete.
  bool drain();
  void complete();
  void probe_timed_out();

  void fail(const char* why, const std::string& detail);
  // fail(), and a word to the service when `error` says the device may be gone.
  void fail_verbs(const char* why, const Error& error);
  void teardown();
  void schedule_reconnect();
  // Runs `fn` only if the session was not torn down in between.
  template <typename Fn>
  auto guarded(Fn fn);

  boost::asio::io_context& io_;
  const LocalPort local_;
  std::shared_ptr<Device> device_;
  const std::string address_;
  const wire::PortAd remote_port_;
  const std::string name_;  // in log lines: address, local and remote port, class
  const ProbeClass class_;
  const ProberSettings settings_;
  const std::shared_ptr<SeriesStats> stats_;

  boost::asio::ip::tcp::resolver resolver_;
  std::shared_ptr<ControlChannel> control_;
  boost::asio::steady_timer timer_;     // next probe, keepalive or reconnect
  boost::asio::steady_timer deadline_;  // connect, set-up or probe timeout
  boost::asio::steady_timer keepalive_;
  std::unique_ptr<Endpoint> endpoint_;
  std::optional<boost::asio::posix::stream_descriptor> channel_;
  wire::Peer remote_;
  wire::Hello hello_;

  uint64_t generation_ = 0;  // bumped by every teardown
  bool stopped_ = false;
  std::chrono::milliseconds backoff_{0};
  std::mt19937 rng_{std::random_device{}()};

  // The probe in flight.
  struct InFlight {
    uint64_t seq = 0;
    Clock::time_point started;
    std::optional<uint64_t> started_ticks;
    bool op_done = false;
    bool echo_done = true;  // a send waits for the responder's echo too
    std::optional<uint64_t> end_ticks;
    bool active = false;
  } flight_;
  uint64_t seq_ = 0;
  Clock::time_point next_probe_;
};

}  // namespace rdma_exporter::probe
