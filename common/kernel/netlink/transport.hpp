#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/result.hpp"

namespace rdma_exporter::netlink {

using Bytes = std::vector<uint8_t>;

// The datagrams the kernel sent back for one request, in order.
struct Reply {
  std::vector<Bytes> datagrams;
};

// Sends one request and gathers its reply. The transport owns the sequence
// number and port id: it stamps them into the request and keeps only the
// datagrams that answer it. It stops reading when a datagram ends the
// exchange (see ends_exchange in messages.hpp). Tests put a fake kernel here.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual Result<Reply> exchange(std::span<const uint8_t> request) = 0;
};

}  // namespace rdma_exporter::netlink
