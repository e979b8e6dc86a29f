#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "common/result.hpp"
#include "exporter/probe/local_ports/local_port.hpp"
#include "exporter/probe/stats/stats.hpp"
#include "exporter/probe/ud/address_handles.hpp"
#include "exporter/probe/ud/addressing.hpp"
#include "exporter/probe/ud/admissions.hpp"
#include "exporter/probe/ud/probe_port.hpp"
#include "exporter/probe/ud/sequences.hpp"
#include "exporter/probe/ud/ud_queue_pair.hpp"
#include "exporter/probe/verbs/borrowed_fd.hpp"
#include "exporter/probe/wire/datagram.hpp"
#include "exporter/probe/wire/protocol.hpp"

// The UD side of one local port: one UD queue pair that sends the probes of
// every UD session of the port and answers the probes of every admitted
// peer. However many targets and peers a port has, it costs one queue pair,
// one completion queue and one buffer.
namespace rdma_exporter::probe {

// Paths a UD class has at most (probe.classes[].flows): a request naming
// another path is malformed.
inline constexpr uint8_t kMaxUdPaths = 16;
static_assert(kMaxUdPaths <= PairWindow::kPaths, "a pair's window keeps the losses of every path");

struct UdPortSettings {
  uint32_t max_size = 4096;  // largest datagram; at most the port's MTU
  uint32_t recv_depth = 256;
  uint32_t send_depth = 256;
  std::string memory = "host";
  int gid_index = -1;  // -1: the port's default GID
  // The event loop's stalls: a request that waited in the completion queue
  // through one is answered with wire::kResponderStalled. None: never.
  std::shared_ptr<StallWatch> stalls;
};

class UdPort final : public UdProbePort {
 public:
  using Clock = std::chrono::steady_clock;

  ~UdPort() override;
  UdPort(const UdPort&) = delete;
  UdPort& operator=(const UdPort&) = delete;

  static Result<std::unique_ptr<UdPort>> create(boost::asio::io_context& io, const LocalPort& port,
                                                const UdPortSettings& settings,
                                                std::shared_ptr<UdPortStats> stats);

  // How peers address this port's queue pair.
  wire::UdPeer address() const override;
  const LocalPort& port() const { return port_; }
  bool timestamps() const { return qp_->completions().timestamps(); }
  uint32_t max_size() const { return settings_.max_size; }
  // False once the queue pair failed; the port is made again at the next scan.
  bool working() const override { return !broken_; }

  // Responder: datagrams from `prober` are answered while it is admitted,
  // one admission per open session, each with its own parameters (see
  // UdAdmissions): requests carrying the class's traffic class `tclass`, at
  // most about the rate of a class sending every `interval`, are answered
  // with the prober's Q_Key on service level `sl` (InfiniBand; RoCE uses the
  // request's traffic class). Returns the admission's id for revoke(), or
  // nothing when the prober's queue pair holds UdAdmissions::kMaxPerPeer.
  std::optional<uint64_t> admit(const wire::UdPeer& prober, uint8_t sl, uint8_t tclass,
                                std::chrono::milliseconds interval);
  void revoke(uint64_t admission);
  // Prober queue pairs admitted.
  std::size_t admitted() const { return admissions_.peers(); }
  // The GIDs of the ports of this host's own group (as their hellos list
  // them): the probers whose requests and admissions count in scope
  // `group`; every other prober counts as `remote`.
  void set_group_peers(std::set<Gid> gids);

  // Prober: a number for a new session, which requests carry and replies
  // are routed by.
  uint32_t open_session(Session session) override;
  void close_session(uint32_t id) override;
  // Sends a request of `size` bytes (at least the datagram header) to the
  // session's responder on the path's flow label.
  Status send_request(uint32_t id, const wire::Datagram& request, uint32_t size,
                      uint8_t sl) override;
  // Spins on the completion queue for up to `limit`, until `done` says so.
  void spin(std::chrono::microseconds limit, const std::function<bool()>& done) override;
  uint64_t clock_khz() const override { return port_.device->core_clock_khz(); }

  // Stops waiting for completions; sessions are told nothing more.
  void close();

  // Address handles at most per destination (GID and LID: a prober's
  // traffic classes, service levels and paths), and in all.
  static constexpr std::size_t kMaxAddressHandlesPerDestination = 64;
  static constexpr std::size_t kMaxAddressHandles = 4096;
  // Completions handled per wake-up before the event loop runs other work.
  static constexpr std::size_t kMaxCompletionsPerWake = 256;

 private:
  struct SendSlot {
    bool busy = false;
    bool request = false;
    uint32_t session = 0;
    uint64_t seq = 0;
    ibv_ah* ah = nullptr;
  };

  UdPort(boost::asio::io_context& io, LocalPort port, UdPortSettings settings,
         std::shared_ptr<UdPortStats> stats);
  Status init();
  void wait();
  // Lets the event loop run other work, then goes on with wait().
  void later();
  // Handles at most `budget` completions; true when it stopped at the
  // budget (more may be waiting).
  bool drain(std::size_t budget);
  // One completion; false when the port closed or failed on it.
  bool on_completion(const Completion& c, Clock::time_point polled);
  void on_receive(uint32_t slot, const Completion& c, Clock::time_point polled);
  // Responder: a request from `from`, answered once per admission.
  void on_request(const wire::Datagram& request, std::span<const uint8_t> bytes, const Gid& from,
                  const Completion& c, Clock::time_point polled);
  // Prober: a reply, handed to its session.
  void on_reply(const wire::Datagram& reply, const std::optional<Gid>& from, const Completion& c,
                Clock::time_point polled);
  void on_sent(uint32_t slot, bool ok, std::optional<uint64_t> ticks);
  void answer(const wire::Datagram& request, std::span<const uint8_t> bytes, const Gid& from,
              uint32_t qpn, uint16_t lid, uint32_t qkey, uint8_t sl, std::optional<uint64_t> ticks,
              Clock::time_point polled, bool stalled);
  Result<ibv_ah*> ah(const Gid& gid, uint16_t lid, uint8_t tclass, uint8_t sl, uint8_t path);
  std::optional<uint32_t> free_slot();
  Status post(uint32_t slot, uint32_t size, ibv_ah* ah, uint32_t qpn, uint32_t qkey);
  void fail(const std::string& what);
  void count_address_handles();
  void count_peers();

  boost::asio::io_context& io_;
  const LocalPort port_;
  const UdPortSettings settings_;
  const std::shared_ptr<UdPortStats> stats_;
  PortInfo info_;
  uint32_t qkey_ = 0;
  std::unique_ptr<UdQueuePair> qp_;
  BorrowedFd events_;  // the completion channel's descriptor
  AddressHandles ahs_{kMaxAddressHandlesPerDestination, kMaxAddressHandles,
                      [](ibv_ah* h) { ibv_destroy_ah(h); }};
  UdAdmissions admissions_;
  std::set<Gid> group_peers_;
  UdSequences sequences_;
  std::map<uint32_t, Session> sessions_;
  std::vector<SendSlot> send_slots_;
  uint32_t in_flight_ = 0;
  // When a poll last left the completion queue empty: what a later poll
  // finds arrived after it.
  Clock::time_point cq_empty_at_ = Clock::now();
  uint32_t next_session_ = 1;
  bool broken_ = false;
  bool closed_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace rdma_exporter::probe
