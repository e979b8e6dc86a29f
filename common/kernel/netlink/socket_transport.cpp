#include "common/kernel/netlink/socket_transport.hpp"

#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cstring>
#include <ctime>

#include "common/kernel/netlink/messages.hpp"

#ifndef NETLINK_RDMA
#define NETLINK_RDMA 20
#endif

namespace rdma_exporter::netlink {
namespace {

// Large enough for the biggest datagram the kernel sends for a dump part.
constexpr std::size_t kReceiveBuffer = std::size_t{64} * 1024;
// A reply larger than this is not a plausible nldev answer.
constexpr std::size_t kMaxReplyBytes = std::size_t{64} * 1024 * 1024;

}  // namespace

void SocketTransport::SocketDeleter::operator()(mnl_socket* s) const {
  mnl_socket_close(s);
}

SocketTransport::SocketTransport(std::chrono::milliseconds receive_timeout)
    : SocketTransport(receive_timeout, NETLINK_RDMA, "NETLINK_RDMA") {}

SocketTransport::SocketTransport(std::chrono::milliseconds receive_timeout, int protocol,
                                 std::string name)
    : receive_timeout_(receive_timeout),
      protocol_(protocol),
      name_(std::move(name)),
      seq_(static_cast<uint32_t>(std::time(nullptr))) {}

SocketTransport::~SocketTransport() = default;

Result<SocketTransport::SocketPtr> SocketTransport::open(std::chrono::milliseconds timeout,
                                                         int protocol, const std::string& name) {
  SocketPtr sock(mnl_socket_open(protocol));
  if (!sock) return Error::system(errno, "open " + name + " socket");
  int one = 1;
  // Readable kernel errors; both are best effort on older kernels.
  mnl_socket_setsockopt(sock.get(), NETLINK_EXT_ACK, &one, sizeof one);
  mnl_socket_setsockopt(sock.get(), NETLINK_CAP_ACK, &one, sizeof one);
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  if (setsockopt(mnl_socket_get_fd(sock.get()), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0) {
    return Error::system(errno, "set " + name + " receive timeout");
  }
  if (mnl_socket_bind(sock.get(), 0, MNL_SOCKET_AUTOPID) < 0) {
    return Error::system(errno, "bind " + name + " socket");
  }
  return sock;
}

Status SocketTransport::probe() {
  auto s = open(std::chrono::milliseconds(100), NETLINK_RDMA, "NETLINK_RDMA");
  if (!s) return s.error();
  return ok_status();
}

Result<Reply> SocketTransport::exchange(std::span<const uint8_t> request) {
  if (request.size() < sizeof(nlmsghdr)) return Error{EINVAL, "netlink request too short"};
  if (!socket_) {
    auto s = open(receive_timeout_, protocol_, name_);
    if (!s) return s.error();
    socket_ = std::move(s).value();
  }
  Bytes msg(request.begin(), request.end());
  auto* nlh = reinterpret_cast<nlmsghdr*>(msg.data());
  const uint32_t seq = ++seq_;
  nlh->nlmsg_seq = seq;
  const uint32_t portid = mnl_socket_get_portid(socket_.get());

  auto fail = [&](int err, const std::string& what) -> Result<Reply> {
    socket_.reset();  // never reuse a socket that may still hold parts of this reply
    return Error::system(err, what);
  };

  if (mnl_socket_sendto(socket_.get(), msg.data(), msg.size()) < 0) {
    return fail(errno, "send to " + name_);
  }

  Reply reply;
  std::size_t total = 0;
  Bytes buf(kReceiveBuffer);
  for (;;) {
    const ssize_t n = mnl_socket_recvfrom(socket_.get(), buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return fail(ETIMEDOUT, "receive from " + name_);
      return fail(errno, "receive from " + name_);
    }
    if (n == 0) return fail(ECONNRESET, "receive from " + name_);
    const auto* first = reinterpret_cast<const nlmsghdr*>(buf.data());
    if (static_cast<std::size_t>(n) >= sizeof(nlmsghdr) &&
        (first->nlmsg_seq != seq || (first->nlmsg_pid != portid && first->nlmsg_pid != 0))) {
      continue;  // a late answer to an earlier request
    }
    total += static_cast<std::size_t>(n);
    if (total > kMaxReplyBytes)
      return fail(EMSGSIZE, "receive from " + name_ + " (reply too large)");
    reply.datagrams.emplace_back(buf.begin(), buf.begin() + n);
    if (ends_exchange(reply.datagrams.back())) break;
  }
  return reply;
}

}  // namespace rdma_exporter::netlink
