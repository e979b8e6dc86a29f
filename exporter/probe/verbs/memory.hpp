#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/result.hpp"
#include "exporter/probe/verbs/device.hpp"

namespace rdma_exporter::probe {

// Registered memory for one endpoint: heap pages, or a dma-buf from
// /dev/udmabuf registered with ibv_reg_dmabuf_mr, with the access given
// (verbs_access.hpp) in the protection domain given (default: the device's).
class Memory {
 public:
  ~Memory();
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;

  static Result<std::unique_ptr<Memory>> create(const Device& device, std::size_t size,
                                                const std::string& kind,
                                                int access = IBV_ACCESS_LOCAL_WRITE,
                                                ibv_pd* pd = nullptr);
  uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  uint32_t lkey() const { return mr_->lkey; }
  uint32_t rkey() const { return mr_->rkey; }
  uint64_t address() const { return reinterpret_cast<uintptr_t>(data_); }
  int access() const { return access_; }

 private:
  Memory() = default;
  uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  bool mapped_ = false;  // data_ is an mmap of memfd_
  int memfd_ = -1;
  int dmabuf_fd_ = -1;
  ibv_mr* mr_ = nullptr;
  int access_ = 0;
};

}  // namespace rdma_exporter::probe
