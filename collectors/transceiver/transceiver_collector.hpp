#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "collectors/collector.hpp"
#include "common/duration.hpp"
#include "common/kernel/netdev/module_reader.hpp"

namespace rdma_exporter {

// The `transceiver` section.
struct TransceiverOptions {
  static constexpr const char* kCollector = "transceiver";
  // How often each module is read. Reads go over the module's two-wire bus
  // and take up to about a second each on real NICs.
  Duration interval{std::chrono::seconds(60)};
};

// The pluggable module (optic or cable) of the netdev behind each RoCE port,
// from its memory map (SFF-8472, SFF-8636, CMIS) through ethtool netlink or
// the legacy ioctl:
//   rdma_transceiver_info                      identity
//   rdma_transceiver_temperature_celsius, rdma_transceiver_supply_voltage_volts
//   rdma_transceiver_{rx_power,tx_power}_watts{lane}, rdma_transceiver_tx_bias_amperes{lane}
//   rdma_transceiver_<quantity>_threshold_<unit>{level}  the module's own limits
//   rdma_transceiver_flag{flag, lane}          flags the module raised
//   rdma_transceiver_read_timestamp_seconds, rdma_transceiver_read_duration_seconds
//   rdma_transceiver_read_failures_total       reads that failed, whole or in part
//   rdma_exporter_transceiver_reads_permitted  whether the kernel lets it read modules
// Modules are read on their own schedule (`interval`) by a thread of their
// own, never in a collection: collect() serves the latest read of each, so a
// slow or hung module delays no scrape. Without a thread (`background`
// false, as with --once) collect() reads what is due itself.
//
// A module that cannot be read is the module's state, not the collector's
// failure (an empty cage answers EIO on some drivers): its series are left
// out, the failure is counted and logged once (and its recovery), and the
// next attempts back off to at most 8 intervals apart.
class TransceiverCollector final : public Collector {
 public:
  // `generic` and `ioctl` may be null; with `background` they are used from
  // the reading thread only.
  TransceiverCollector(netlink::Transport* generic, ethtool::Ioctl* ioctl,
                       const TransceiverOptions& options, bool background);
  ~TransceiverCollector() override;
  TransceiverCollector(const TransceiverCollector&) = delete;
  TransceiverCollector& operator=(const TransceiverCollector&) = delete;

  std::string_view name() const override { return "transceiver"; }
  std::vector<std::string> collect(Scrape& scrape, MetricSink& sink) override;
  bool reconfigure(const std::any& options) override;

  // Blocks until `reads` reads have completed since the collector started,
  // or `limit` has passed; returns whether they had. For tests, which drive
  // the reading thread by its reads.
  bool wait_for_reads(uint64_t reads, Duration limit);

 private:
  struct Entry {
    std::optional<module_eeprom::Module> module;  // unset: no module, or the read failed
    std::vector<std::string> problems;            // why this read (or part of it) failed
    std::chrono::system_clock::time_point read_at;
    std::chrono::steady_clock::time_point read_steady;
    double duration_seconds = 0;
    bool refused = false;  // the kernel refused the read (EPERM: no CAP_NET_ADMIN)
  };
  // What outlives one read of a netdev's module.
  struct Health {
    uint64_t failures = 0;     // reads that failed, whole or in part
    unsigned consecutive = 0;  // whole failures in a row: the back-off
    std::string logged;        // the problems last logged; empty: none
  };

  Entry read_one(const std::string& netdev);
  // Stores a read: the cache, the failure count and back-off, the log line
  // when what is wrong changed. Under mutex_.
  void store(const std::string& netdev, Entry e);
  // When the netdev's next read falls due, its back-off included.
  std::chrono::steady_clock::time_point next_read(const std::string& netdev, const Entry& e) const;
  // The netdevs in `wanted_` whose read is due at `now`.
  std::vector<std::string> due(std::chrono::steady_clock::time_point now) const;
  void run();

  module_eeprom::Reader reader_;
  const bool background_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;          // the reading thread: new netdevs, new interval, stop
  std::condition_variable read_;          // wait_for_reads: a read completed
  Duration interval_;                     // guarded by mutex_
  std::set<std::string> wanted_;          // netdevs the last collection saw; guarded
  std::map<std::string, Entry> cache_;    // guarded
  std::map<std::string, Health> health_;  // guarded; netdevs that have a module to read
  uint64_t reads_ = 0;                    // guarded
  // Whether the kernel lets this process read module memory; unknown until
  // a read got an answer. Guarded.
  std::optional<bool> permitted_;
  bool stop_ = false;  // guarded
  std::thread thread_;
};

}  // namespace rdma_exporter
