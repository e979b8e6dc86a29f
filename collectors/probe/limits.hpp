#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

// The responder's limits by default, in one place: the configuration's
// (ProbeOptions) and the responder's own (ResponderSettings) start from
// these. docs/probe.md, "The responder's limits", explains each.
namespace rdma_exporter::probe::limits {

// Authenticated sessions, in all and per source group.
inline constexpr int kMaxSessions = 1024;
inline constexpr int kMaxSessionsPerSource = 128;
// Control connections per minute per source group (a token bucket).
inline constexpr int kSetupsPerMinutePerSource = 120;
inline constexpr uint32_t kMaxMessageSize = 1 << 20;
inline constexpr std::chrono::milliseconds kIdleTimeout{60000};
// Connections that have not authenticated yet (handshakes: the hello sent,
// no valid set-up received), in all and per source group, and how long one
// may last.
inline constexpr int kMaxHandshakes = 256;
inline constexpr int kMaxHandshakesPerSource = 64;
inline constexpr std::chrono::milliseconds kHandshakeTimeout{1000};
// Source groups remembered (their token buckets and counts).
inline constexpr std::size_t kMaxSources = 4096;

}  // namespace rdma_exporter::probe::limits
