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
  // Bytes the responder's RC sessions may register (pin) in all: a set-up
  // whose buffer would pass it is refused (capacity).
  uint64_t max_pinned_bytes = uint64_t{128} << 20;
  // The shortest class interval a UD admission is answered at, whatever
  // its set-up says: the replies one prober queue pair can draw are bounded
  // by its admissions' classes at this interval.
  std::chrono::milliseconds ud_min_interval{10};
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
