#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace rdma_exporter::probe {

// The responder's budgets, defined once: the configuration's keys
// (`probe.max_sessions`, ...; ProbeOptions::responder), the responder's
// settings (ResponderSettings::limits) and its source table all hold this
// struct. docs/probe.md, "The responder's limits", explains each.
struct ResponderLimits {
  // Authenticated sessions, in all and per source group (source_group()).
  int max_sessions = 1024;
  int max_sessions_per_source = 128;
  // Control connections per minute per source group (a token bucket).
  int setups_per_minute_per_source = 120;
  uint32_t max_message_size = 1 << 20;
  std::chrono::milliseconds idle_timeout{60000};
  // Connections that have not authenticated yet (handshakes: the hello
  // sent, no valid set-up received), in all and per source group, and how
  // long one may last from connect to a valid set-up. Not configurable.
  int max_handshakes = 256;
  int max_handshakes_per_source = 64;
  std::chrono::milliseconds handshake_timeout{1000};

  bool operator==(const ResponderLimits&) const = default;
};

namespace limits {
// Source groups remembered (their token buckets and counts).
inline constexpr std::size_t kMaxSources = 4096;
}  // namespace limits

}  // namespace rdma_exporter::probe
