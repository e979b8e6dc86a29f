#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include "common/result.hpp"
#include "exporter/probe/wire/datagram.hpp"
#include "exporter/probe/wire/protocol.hpp"

// What a UD prober needs of its local port's UD queue pair, as an
// interface: UdPort is the one on a device, and the prober's tests give it
// a fake, so its state machine (overlapping probes, replies, losses by path,
// failures) runs without a device.
namespace rdma_exporter::probe {

// What the prober's side learns of one probe: when its request left (device
// clock, when the device has completion timestamps) and when and how its
// reply came back.
struct UdReply {
  wire::Datagram datagram;
  std::optional<uint64_t> ticks;                 // T5: the reply's receive completion, device clock
  std::chrono::steady_clock::time_point polled;  // T6: when it was taken from the queue
};

class UdProbePort {
 public:
  // A prober's session on the port.
  struct Session {
    wire::UdPeer responder;  // replies from elsewhere are dropped
    std::function<void(uint64_t seq, std::optional<uint64_t> ticks)> sent;  // T2
    std::function<void(const UdReply&)> reply;
  };

  virtual ~UdProbePort() = default;

  // How peers address the port's queue pair.
  virtual wire::UdPeer address() const = 0;
  // False once the queue pair failed.
  virtual bool working() const = 0;
  // A number for a new session, which requests carry and replies are
  // routed by.
  virtual uint32_t open_session(Session session) = 0;
  virtual void close_session(uint32_t id) = 0;
  // Sends a request of `size` bytes (at least the datagram header) to the
  // session's responder on the path's flow label; ENOBUFS when every send
  // slot is busy.
  virtual Status send_request(uint32_t id, const wire::Datagram& request, uint32_t size,
                              uint8_t sl) = 0;
  // Spins on the completion queue for up to `limit`, until `done` says so.
  virtual void spin(std::chrono::microseconds limit, const std::function<bool()>& done) = 0;
  // The rate of the device clock that completion timestamps count.
  virtual uint64_t clock_khz() const = 0;

 protected:
  UdProbePort() = default;
  UdProbePort(const UdProbePort&) = default;
  UdProbePort& operator=(const UdProbePort&) = default;
};

}  // namespace rdma_exporter::probe
