#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/kernel/netlink/transport.hpp"

struct mnl_socket;

namespace rdma_exporter::netlink {

// The real kernel: a netlink socket through libmnl, NETLINK_RDMA unless told
// otherwise (NETLINK_ROUTE for DCB). The socket opens on first use and is
// reopened after any failure, so a lost or stale reply can never be read as
// the answer to a later request.
class SocketTransport final : public Transport {
 public:
  explicit SocketTransport(std::chrono::milliseconds receive_timeout = std::chrono::seconds(5));
  // `protocol` is a NETLINK_* number; `name` its name for messages.
  SocketTransport(std::chrono::milliseconds receive_timeout, int protocol, std::string name);
  ~SocketTransport() override;
  SocketTransport(const SocketTransport&) = delete;
  SocketTransport& operator=(const SocketTransport&) = delete;

  Result<Reply> exchange(std::span<const uint8_t> request) override;

  // Opens a socket only to learn whether this kernel has rdma netlink.
  static Status probe();

 private:
  struct SocketDeleter {
    void operator()(mnl_socket* s) const;
  };
  using SocketPtr = std::unique_ptr<mnl_socket, SocketDeleter>;

  static Result<SocketPtr> open(std::chrono::milliseconds receive_timeout, int protocol,
                                const std::string& name);

  std::chrono::milliseconds receive_timeout_;
  int protocol_;
  std::string name_;
  SocketPtr socket_;
  uint32_t seq_ = 0;
};

}  // namespace rdma_exporter::netlink
