#include "exporter/systemd.hpp"

#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>

#include "common/errno_text.hpp"

namespace rdma_exporter::systemd {

Result<std::vector<int>> listen_fds() {
  const int n = sd_listen_fds(1);
  if (n < 0) {
    return Error{-n, std::string("--web.systemd-socket: reading the sockets systemd passed: ") +
                         errno_text(-n)};
  }
  if (n == 0) {
    return Error{ENOENT,
                 "--web.systemd-socket: systemd passed no socket to this process (LISTEN_FDS "
                 "and LISTEN_PID unset or for another process); start it through "
                 "rdma_exporter.socket, or leave out --web.systemd-socket"};
  }
  std::vector<int> fds;
  for (int fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + n; ++fd) {
    if (sd_is_socket(fd, AF_UNSPEC, SOCK_STREAM, 1) <= 0) {
      return Error{EINVAL, "--web.systemd-socket: descriptor " + std::to_string(fd) +
                               " from systemd is not a listening stream socket (the .socket "
                               "unit needs ListenStream=)"};
    }
    fds.push_back(fd);
  }
  return fds;
}

bool notify(const std::string& state) {
  return sd_notify(0, state.c_str()) >= 0;
}

std::string reloading_state() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const auto usec = static_cast<std::uint64_t>(now.tv_sec) * 1000000U +
                    static_cast<std::uint64_t>(now.tv_nsec) / 1000U;
  return "RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec);
}

std::optional<std::chrono::microseconds> watchdog_timeout() {
  std::uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return std::nullopt;
  return std::chrono::microseconds(usec);
}

}  // namespace rdma_exporter::systemd
