#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "collectors/probe/protocol.hpp"
#include "collectors/probe/qp_params.hpp"
#include "common/result.hpp"

// RAII over the libibverbs objects the probe uses. Nothing here blocks: the
// event loop waits on a completion channel's file descriptor.
namespace rdma_exporter::probe {

struct PortInfo {
  uint8_t port = 1;
  uint16_t lid = 0;
  bool ethernet = true;  // RoCE (needs a GRH) or InfiniBand
  int gid_index = 0;
  std::array<uint8_t, 16> gid{};
  uint32_t active_mtu = 1024;  // bytes
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

  // `name` empty: the first device with an active port.
  static Result<std::shared_ptr<Device>> open(const std::string& name);

  const std::string& name() const { return name_; }
  ibv_context* context() const { return ctx_; }
  ibv_pd* pd() const { return pd_; }
  // Where queue pairs and completion queues are made.
  ibv_pd* resource_pd() const { return parent_ ? parent_ : pd_; }
  bool thread_domain() const { return parent_ != nullptr; }
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
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_td* td_ = nullptr;
  ibv_pd* parent_ = nullptr;
  uint64_t core_clock_khz_ = 0;
};

// Registered memory for one endpoint: heap pages, or a dma-buf from
// /dev/udmabuf registered with ibv_reg_dmabuf_mr.
class Memory {
 public:
  ~Memory();
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;

  static Result<std::unique_ptr<Memory>> create(const Device& device, std::size_t size,
                                                const std::string& kind);
  uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  uint32_t lkey() const { return mr_->lkey; }
  uint32_t rkey() const { return mr_->rkey; }
  uint64_t address() const { return reinterpret_cast<uintptr_t>(data_); }

 private:
  Memory() = default;
  uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  bool mapped_ = false;  // data_ is an mmap of memfd_
  int memfd_ = -1;
  int dmabuf_fd_ = -1;
  ibv_mr* mr_ = nullptr;
};

// A queue pair's parameters, the port it uses and its memory.
struct EndpointConfig : QpParams {
  PortInfo port;
  uint32_t recv_depth = 1;
  std::string memory = "host";
};

struct Completion {
  uint64_t wr_id = 0;
  ibv_wc_status status = IBV_WC_SUCCESS;
  ibv_wc_opcode opcode = IBV_WC_SEND;
  std::optional<uint64_t> timestamp;  // device clock ticks
};

// One RC queue pair with its completion queue, completion channel and memory.
class Endpoint {
 public:
  // Receives carry this bit in their work request id; connect() posts
  // `recv_depth` of them, numbered from 0.
  static constexpr uint64_t kRecvTag = 1ull << 63;

  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  static Result<std::unique_ptr<Endpoint>> create(std::shared_ptr<Device> device,
                                                  const EndpointConfig& config);

  wire::Peer local() const;
  const EndpointConfig& config() const { return config_; }
  const Device& device() const { return *device_; }
  bool timestamps() const { return cq_ex_ != nullptr; }

  // INIT -> RTR -> RTS towards `remote`.
  Status connect(const wire::Peer& remote);

  Status post_recv(uint64_t wr_id);
  // The class's operation: a send, or an RDMA write or read of `size` bytes
  // at the remote's address.
  Status post(uint64_t wr_id, const wire::Peer& remote);
  Status post_send(uint64_t wr_id);

  // Fills `out` with up to its size of completions; returns how many.
  Result<std::size_t> poll(std::span<Completion> out);
  // Asks for an event on the channel at the next completion.
  Status arm();
  int channel_fd() const { return channel_->fd; }
  // Takes and acknowledges the channel's pending events, without blocking.
  void consume_events();

 private:
  Endpoint() = default;
  Status post_as(Op op, uint64_t wr_id, const wire::Peer& remote);
  // The whole probe buffer as one scatter/gather entry.
  ibv_sge buffer() const;

  std::shared_ptr<Device> device_;
  EndpointConfig config_;
  std::unique_ptr<Memory> memory_;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_cq_ex* cq_ex_ = nullptr;  // set when completions carry timestamps
  ibv_qp* qp_ = nullptr;
  uint32_t psn_ = 0;
  uint32_t max_inline_ = 0;
};

// Bytes -> enum ibv_mtu.
ibv_mtu mtu_enum(uint32_t bytes);
uint32_t mtu_bytes(ibv_mtu mtu);

// Device clock ticks -> seconds.
double ticks_to_seconds(uint64_t ticks, uint64_t core_clock_khz);

}  // namespace rdma_exporter::probe
