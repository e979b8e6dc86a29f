// How many UD replies one admitted prober queue pair can draw from a
// responder port: the real UdAdmissions table on a simulated clock, a
// queue pair with N admissions (each its own Q_Key, each saying its class
// sends every millisecond), flooded with requests. The responder counts a
// class at probe.ud_min_interval at the fastest (--floor-ms, as the
// session passes it to the table).
//
// Run: build/bench/ud_reply_bound [--floor-ms 10] [--seconds 10] [--rate 100000]
// Prints one line per admission count: replies a second, and the bytes a
// second they make at 4 KiB each.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "exporter/probe/ud/admissions.hpp"

using namespace rdma_exporter::probe;

namespace {

long arg(int argc, char** argv, const char* name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::strtol(argv[i + 1], nullptr, 10);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const long floor_ms = arg(argc, argv, "--floor-ms", 10);
  const long seconds = arg(argc, argv, "--seconds", 10);
  const long rate = arg(argc, argv, "--rate", 100000);
  const auto claimed = std::chrono::milliseconds(1);
  const auto interval = std::max(claimed, std::chrono::milliseconds(floor_ms));
  const auto step = std::chrono::nanoseconds(1'000'000'000L / rate);
  std::printf("floor %ld ms, %ld requests/s for %ld s\n", floor_ms, rate, seconds);
  std::printf("admissions replies/s  MB/s at 4 KiB\n");
  for (std::size_t n = 1; n <= UdAdmissions::kMaxPerPeer; ++n) {
    UdAdmissions table;
    const auto t0 = UdAdmissions::Clock::time_point{} + std::chrono::hours(1);
    Gid victim{};
    victim[15] = 7;
    for (std::size_t q = 1; q <= n; ++q) {
      table.admit(victim, 0x99, UdAdmission{static_cast<uint32_t>(q), 0, 0, interval}, t0);
    }
    long replies = 0;
    auto t = t0;
    for (long i = 0; i < rate * seconds; ++i) {
      t += step;
      replies += static_cast<long>(table.request(victim, 0x99, 0, t).count);
    }
    const double per_second = static_cast<double>(replies) / static_cast<double>(seconds);
    std::printf("%10zu %10.0f %12.1f\n", n, per_second, per_second * 4096 / 1e6);
  }
  return 0;
}
