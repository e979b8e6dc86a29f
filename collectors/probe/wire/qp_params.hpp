#pragma once

#include <cstdint>

// What a probe's pair of queue pairs is made with: the operation, message
// size, traffic class, service level and path MTU. A probe class is
// configured with them, the prober sends them to the responder in its setup
// message, and both sides make their queue pair from them. They are defined
// here once, with their defaults.
namespace rdma_exporter::probe {

// send, write and read use RC queue pairs, one pair per session; ud sends a
// datagram from the port's one UD queue pair and times the responder's echo.
enum class Op : uint8_t { send = 1, write = 2, read = 3, ud = 4 };

constexpr const char* op_name(Op op) {
  switch (op) {
    case Op::send:
      return "send";
    case Op::write:
      return "write";
    case Op::read:
      return "read";
    case Op::ud:
      return "ud";
  }
  return "unknown";
}

struct QpParams {
  Op op = Op::write;
  uint32_t size = 64;   // bytes per message
  uint8_t tclass = 0;   // IP traffic class (DSCP << 2 | ECN) in the GRH
  uint8_t sl = 0;       // service level (InfiniBand) / priority (RoCE without DSCP trust)
  uint32_t mtu = 1024;  // path MTU in bytes: 256, 512, 1024, 2048 or 4096

  bool operator==(const QpParams&) const = default;
};

}  // namespace rdma_exporter::probe
