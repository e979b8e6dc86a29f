#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace rdma_exporter::systemd {

// systemd's side of the daemon, through libsystemd: socket activation
// (--web.systemd-socket) and the notify protocol (Type=notify). Outside
// systemd (no LISTEN_FDS, no NOTIFY_SOCKET) notifications do nothing.

// The listening TCP sockets systemd passed to this process (LISTEN_FDS,
// LISTEN_PID), from descriptor 3 on; the LISTEN_* variables are removed from
// the environment. An error when there is none, or when one is not a
// listening stream socket.
Result<std::vector<int>> listen_fds();

// Sends `state` (newline-separated VARIABLE=value assignments) to the
// service manager; false when it could not be sent. Nothing is sent, and
// true is returned, when NOTIFY_SOCKET is not set.
bool notify(const std::string& state);

// "RELOADING=1" with the MONOTONIC_USEC systemd 253 and later ask for.
std::string reloading_state();

// The watchdog timeout when systemd set one for this process
// (WATCHDOG_USEC, WATCHDOG_PID); WATCHDOG=1 is due within it.
std::optional<std::chrono::microseconds> watchdog_timeout();

}  // namespace rdma_exporter::systemd
