#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "exporter/probe/control/client.hpp"
#include "exporter/probe/local_ports/local_port.hpp"
#include "exporter/probe/plan/options.hpp"
#include "exporter/probe/verbs/borrowed_fd.hpp"
#include "exporter/probe/verbs/queue_pair.hpp"

namespace rdma_exporter::probe {

// Makes the queue pair of each session of an RC prober: the class's
// parameters, `recv_depth` receives, on the local port's GID at `gid_index`
// (-1: the port's default).
using RcQueuePairMaker = std::function<Result<std::unique_ptr<RcQueuePair>>(
    const QpParams& params, int gid_index, uint32_t recv_depth)>;

// Queue pairs (Endpoint) on the local port's device, with their buffer in
// `memory`.
RcQueuePairMaker device_queue_pairs(const LocalPort& local, std::string memory);

// Probes one port of a target from one local port with one RC class (send,
// write, read), for as long as it runs: over a control connection
// (ControlClient) sets up a pair of RC queue pairs with the responder, then
// posts one probe per interval and times it. A probe this host's event loop
// stalled in (StallWatch) counts as invalid, not as a latency; one whose
// timeout passed in a stall without its completion gets one more timeout
// before it times out.
class Prober : public ControlClient {
 public:
  // `local_name` names the local port in log lines ("mlx5_0/1").
  Prober(boost::asio::io_context& io, const std::string& local_name, RcQueuePairMaker make,
         const std::string& address, const wire::PortAd& remote, ProbeClass cls,
         ProberSettings settings, std::shared_ptr<SeriesStats> stats);

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
  void on_deadline();
  void probe_timed_out();
  // Whether this host's event loop stalled since `from`.
  bool stalled_since(Clock::time_point from) const;

  const RcQueuePairMaker make_;
  const ProbeClass class_;
  const OpRow& row_;  // the class's op
  std::unique_ptr<RcQueuePair> qp_;
  BorrowedFd channel_;  // the queue pair's completion channel
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
    bool extended = false;  // its timeout passed in a stall: one more
  } flight_;
  uint64_t seq_ = 0;
  Clock::time_point next_probe_;
};

}  // namespace rdma_exporter::probe
