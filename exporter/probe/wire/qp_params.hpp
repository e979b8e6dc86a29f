#pragma once

#include <cstdint>

#include "exporter/probe/wire/ops.hpp"

// What a probe's pair of queue pairs is made with: the operation, message
// size, traffic class, service level and path MTU. A probe class is
// configured with them, the prober sends them to the responder in its setup
// message, and both sides make their queue pair from them. They are defined
// here once, with their defaults.
namespace rdma_exporter::probe {

struct QpParams {
  Op op = Op::write;
  uint32_t size = 64;   // bytes per message
  uint8_t tclass = 0;   // IP traffic class (DSCP << 2 | ECN) in the GRH
  uint8_t sl = 0;       // service level (InfiniBand) / priority (RoCE without DSCP trust)
  uint32_t mtu = 1024;  // path MTU in bytes: 256, 512, 1024, 2048 or 4096

  bool operator==(const QpParams&) const = default;
};

}  // namespace rdma_exporter::probe
