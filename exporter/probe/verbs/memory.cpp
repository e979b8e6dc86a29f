#include "exporter/probe/verbs/memory.hpp"

#include <fcntl.h>
#include <linux/udmabuf.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "exporter/probe/verbs/error.hpp"

namespace rdma_exporter::probe {
namespace {

constexpr std::size_t kPage = 4096;

std::size_t round_to_page(std::size_t n) {
  return (n + kPage - 1) / kPage * kPage;
}

}  // namespace

Memory::~Memory() {
  if (mr_) ibv_dereg_mr(mr_);
  if (dmabuf_fd_ >= 0) ::close(dmabuf_fd_);
  if (mapped_) {
    ::munmap(data_, size_);
  } else {
    std::free(data_);  // NOLINT(cppcoreguidelines-no-malloc)
  }
  if (memfd_ >= 0) ::close(memfd_);
}

Result<std::unique_ptr<Memory>> Memory::create(const Device& device, std::size_t size,
                                               const std::string& kind, int access, ibv_pd* pd) {
  if (pd == nullptr) pd = device.pd();
  std::unique_ptr<Memory> m(new Memory());
  m->access_ = access;
  m->size_ = round_to_page(std::max<std::size_t>(size, 64));
  if (kind == "udmabuf") {
    m->memfd_ = ::memfd_create("rdma_exporter_probe", MFD_ALLOW_SEALING | MFD_CLOEXEC);
    if (m->memfd_ < 0) return Error::system(errno, "probe memory: memfd_create");
    if (::ftruncate(m->memfd_, static_cast<off_t>(m->size_)) != 0 ||
        ::fcntl(m->memfd_, F_ADD_SEALS, F_SEAL_SHRINK) != 0) {
      return Error::system(errno, "probe memory: sizing the memfd");
    }
    const int dev = ::open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
    if (dev < 0) return Error::system(errno, "probe memory: opening /dev/udmabuf");
    udmabuf_create create{};
    create.memfd = static_cast<uint32_t>(m->memfd_);
    create.flags = UDMABUF_FLAGS_CLOEXEC;
    create.size = m->size_;
    m->dmabuf_fd_ = ::ioctl(dev, UDMABUF_CREATE, &create);
    const int err = errno;
    ::close(dev);
    if (m->dmabuf_fd_ < 0) return Error::system(err, "probe memory: UDMABUF_CREATE");
    void* p = ::mmap(nullptr, m->size_, PROT_READ | PROT_WRITE, MAP_SHARED, m->memfd_, 0);
    if (p == MAP_FAILED) return Error::system(errno, "probe memory: mapping the memfd");
    m->data_ = static_cast<uint8_t*>(p);
    m->mapped_ = true;
    m->mr_ = ibv_reg_dmabuf_mr(pd, 0, m->size_, m->address(), m->dmabuf_fd_, access);
    if (m->mr_ == nullptr) {
      return verbs_error(errno, device.name() + ": registering dma-buf memory (ibv_reg_dmabuf_mr)");
    }
    return m;
  }
  m->data_ = static_cast<uint8_t*>(std::aligned_alloc(kPage, m->size_));  // NOLINT
  if (m->data_ == nullptr) return Error{ENOMEM, "probe memory: allocating " + std::to_string(size)};
  std::memset(m->data_, 0, m->size_);
  m->mr_ = ibv_reg_mr(pd, m->data_, m->size_, access);
  if (m->mr_ == nullptr) return verbs_error(errno, device.name() + ": registering probe memory");
  return m;
}

}  // namespace rdma_exporter::probe
