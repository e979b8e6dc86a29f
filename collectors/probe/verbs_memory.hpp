#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "collectors/probe/verbs_device.hpp"
#include "common/result.hpp"

namespace rdma_exporter::probe {

// What the peer's queue pair may do with a probe buffer, and what a probe
// queue pair allows: local writes, remote writes and remote reads.
inline constexpr int kProbeAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

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

}  // namespace rdma_exporter::probe
