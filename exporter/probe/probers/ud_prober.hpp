#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "exporter/probe/control/client.hpp"
#include "exporter/probe/plan/options.hpp"
#include "exporter/probe/ud/port.hpp"

namespace rdma_exporter::probe {

// Where a UD prober's results go: the pair's counters (and, in the
// per-target shape, its histogram), the latency histogram of the target's
// group, and the delays on either end.
struct UdProberStats {
  std::shared_ptr<SeriesStats> pair;
  std::shared_ptr<HistogramStats> latency;          // network round trip, per group
  std::shared_ptr<HistogramStats> prober_delay;     // device clock only
  std::shared_ptr<HistogramStats> responder_delay;  // as the responders report it
  std::shared_ptr<StallWatch> stalls;               // the event loop's; none: never stalls
};

// The UD latency histograms of a prober of `cls` on `local` whose target is
// in `scope` ("group" or "remote"); each is also added to `keep`. `pair` is
// left to the caller.
UdProberStats ud_prober_histograms(ProbeStats& stats, const LocalPort& local, const ProbeClass& cls,
                                   const char* scope,
                                   std::vector<std::shared_ptr<HistogramStats>>& keep);

// The counters of every UD pair of `cls` on `local` whose target is in
// `scope`, taken together (ScopeStats).
std::shared_ptr<ScopeStats> ud_scope_stats(ProbeStats& stats, const LocalPort& local,
                                           const ProbeClass& cls, const char* scope);

// Network round trip from a UD probe's times (R-Pingmesh's split):
//   with device timestamps  (T5 - T2) - (T4 - T3), the prober's own delay
//                           (T6 - T1) - (T5 - T2);
//   with the host clock     (T6 - T1) - (T4 - T3), no prober delay.
// T1 and T6: the host's clock when the request was posted and the reply
// taken; T2 and T5: the device's completion timestamps of the request's send
// and the reply's receive; T4 - T3: the responder's delay, from the reply.
// Negative differences (clock readings out of order) count as 0.
struct UdTiming {
  double network = 0;
  std::optional<double> prober_delay;
  double responder_delay = 0;
  bool device_clock = false;
};
UdTiming ud_timing(double host_rtt, std::optional<double> device_rtt, double responder_delay);

// Probes one port of a target from one local port with the UD class: admits
// itself over a control connection (ControlClient: hello, ud_setup,
// ud_accept), then sends one datagram per interval from the local port's UD
// queue pair (shared with every other UD session of the port), cycling
// through the class's flow labels, and times the responder's echo. Probes
// may overlap: each carries its sequence number, and one without a reply
// within the timeout is lost, counted against its path.
//
// Stalls (StallWatch) make a probe invalid instead: one whose life this
// host's event loop stalled in (local_stall), and one whose reply says the
// responder's did or reports a responder delay of kStallThreshold or more
// (responder_stall). A probe without a reply in its timeout waits, overdue,
// for a late reply that a stall explains until 4 timeouts (at most 10 s)
// have passed; then it is lost.
class UdProber : public ControlClient {
 public:
  // `port` is the local port's UD queue pair, `local_name` names the port
  // ("mlx5_0/1"); without a queue pair (it could not be made) every session
  // fails with reason "setup" until the port has one.
  UdProber(boost::asio::io_context& io, std::string local_name, std::shared_ptr<UdProbePort> port,
           const std::string& address, const wire::PortAd& remote, ProbeClass cls,
           ProberSettings settings, UdProberStats stats);

 private:
  void on_hello() override;
  void on_accept(const wire::Message& answer) override;
  void on_teardown() override;

  void probe();
  void sweep(Clock::time_point now);
  void on_reply(const UdReply& reply);
  bool stalled_between(Clock::time_point from, Clock::time_point to) const;

  const std::string local_name_;
  const std::shared_ptr<UdProbePort> port_;
  const ProbeClass class_;
  const UdProberStats ud_stats_;
  uint32_t session_ = 0;
  struct Probe {
    Clock::time_point posted;            // T1
    std::optional<uint64_t> sent_ticks;  // T2
    uint8_t path = 0;
  };
  std::map<uint64_t, Probe> in_flight_;  // by sequence number
  std::map<uint64_t, Probe> overdue_;    // past the timeout, by sequence number
  uint64_t seq_ = 0;
  Clock::time_point next_probe_;
};

}  // namespace rdma_exporter::probe
