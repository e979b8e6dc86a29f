#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"

// The RDMA device the probe uses: finding and opening it, its protection
// domains, its ports and their GIDs, and its clock. RAII over libibverbs.
namespace rdma_exporter::probe {

struct PortInfo {
  uint8_t port = 1;
  uint16_t lid = 0;
  bool ethernet = true;  // RoCE (needs a GRH) or InfiniBand
  int gid_index = 0;
  std::array<uint8_t, 16> gid{};
  uint32_t active_mtu = 1024;  // bytes
};

// A device as the kernel lists it: its name and node GUID (host order).
struct DeviceId {
  std::string name;
  uint64_t guid = 0;

  bool operator==(const DeviceId&) const = default;
};

// What the probe does on an asynchronous event of its device.
enum class DeviceEvent {
  other,  // nothing
  ports,  // a port's state, address or GIDs changed: look at the ports again
  fatal,  // the device is gone or broken: release it
};

// An opened device and the protection domain every probe object lives in.
// When the device supports them, queue pairs and completion queues are made
// in a parent domain over a thread domain of their own: dedicated, lock-free
// hardware resources, since one thread drives all of them.
class Device {
 public:
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // The RDMA devices the kernel has now.
  static Result<std::vector<DeviceId>> list();
  // The entries of /sys/class/infiniband_verbs, sorted: a cheap sign of the
  // device list changing (a device's entry goes as soon as its removal
  // starts, before the kernel waits for users to close it).
  static std::vector<std::string> uverbs_entries();
  static Result<std::shared_ptr<Device>> open(const std::string& name);

  const std::string& name() const { return name_; }
  uint64_t guid() const { return guid_; }
  uint8_t port_count() const { return port_count_; }
  bool port_active(uint8_t port) const;
  // The port's link layer: true for Ethernet (RoCE), false for InfiniBand
  // (and when the port cannot be queried).
  bool port_ethernet(uint8_t port) const;
  // The descriptor asynchronous events arrive on (non-blocking; the device
  // owns it), and the events that arrived, each acknowledged.
  int async_fd() const;
  std::vector<DeviceEvent> take_events();
  ibv_context* context() const { return ctx_; }
  ibv_pd* pd() const { return pd_; }
  // Where queue pairs and completion queues are made.
  ibv_pd* resource_pd() const { return parent_ ? parent_ : pd_; }
  bool thread_domain() const { return parent_ != nullptr; }
  // The thread domain parent domains are made over (null without one).
  ibv_td* td() const { return td_; }
  // Completion timestamps in device clock ticks, and the clock's rate.
  bool completion_timestamps() const { return core_clock_khz_ != 0; }
  uint64_t core_clock_khz() const { return core_clock_khz_; }
  std::optional<uint64_t> raw_clock() const;

  // The port, with the GID to use: `gid_index` >= 0, or -1 for the port's
  // RoCEv2 IPv4 GID (InfiniBand: index 0).
  Result<PortInfo> port(uint8_t port, int gid_index) const;

 private:
  Device() = default;
  std::string name_;
  uint64_t guid_ = 0;
  uint8_t port_count_ = 0;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_td* td_ = nullptr;
  ibv_pd* parent_ = nullptr;
  uint64_t core_clock_khz_ = 0;
};

// A protection domain of one session's own, for memory whose rkey is handed
// to that session's peer: an rkey reaches only memory of its protection
// domain, so a peer that learns or guesses another session's rkey gets a
// remote access error. Where the device has a thread domain, queue pairs and
// CQs are made in a parent domain over this protection domain and the
// device's thread domain; when that parent domain cannot be made, in the
// plain protection domain.
class Domain {
 public:
  ~Domain();
  Domain(const Domain&) = delete;
  Domain& operator=(const Domain&) = delete;

  static Result<std::unique_ptr<Domain>> create(const Device& device);
  ibv_pd* pd() const { return pd_; }
  // Where queue pairs and completion queues are made.
  ibv_pd* resource_pd() const { return parent_ ? parent_ : pd_; }
  bool thread_domain() const { return parent_ != nullptr; }

 private:
  Domain() = default;
  ibv_pd* pd_ = nullptr;
  ibv_pd* parent_ = nullptr;
};

// Bytes -> enum ibv_mtu.
ibv_mtu mtu_enum(uint32_t bytes);
uint32_t mtu_bytes(ibv_mtu mtu);

// Device clock ticks -> seconds.
double ticks_to_seconds(uint64_t ticks, uint64_t core_clock_khz);

}  // namespace rdma_exporter::probe
