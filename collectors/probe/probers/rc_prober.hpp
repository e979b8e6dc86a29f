#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "collectors/probe/control/client.hpp"
#include "collectors/probe/devices/local_port.hpp"
#include "collectors/probe/plan/options.hpp"
#include "collectors/probe/verbs/borrowed_fd.hpp"
#include "collectors/probe/verbs/endpoint.hpp"

namespace rdma_exporter::probe {

// Probes one port of a target from one local port with one RC class (send,
// write, read), for as long as it runs: over a control connection
// (ControlClient) sets up a pair of RC queue pairs with the responder, then
// posts one probe per interval and times it.
class Prober : public ControlClient {
 public:
  Prober(boost::asio::io_context& io, LocalPort local, std::string address, wire::PortAd remote,
         ProbeClass cls, ProberSettings settings, std::shared_ptr<SeriesStats> stats);

 private:
  void on_hello() override;
  void on_accept(const wire::Message& answer) override;
  void on_teardown() override;

  void probe();
  void spin();
  void wait_for_completion();
  // Handles what the CQ holds; true when the probe in flight is complete.
  bool drain();
  void complete();
  void probe_timed_out();

  const LocalPort local_;
  std::shared_ptr<Device> device_;
  const ProbeClass class_;
  const OpRow& row_;  // the class's op
  std::unique_ptr<Endpoint> endpoint_;
  BorrowedFd channel_;  // the endpoint's completion channel
  wire::Peer remote_;

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
