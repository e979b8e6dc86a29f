#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "collectors/kernel/nldev/model.hpp"

namespace rdma_exporter {

// Turns per-collection observations of counter sets into series that stay
// monotonic:
// - a set's counters are followed across collections; a value that falls
//   while the set lives is a 32-bit wrap (mlx5's per-QP counters are 32-bit)
//   and is unwrapped;
// - a series may sum several sets (aggregation, or sets that share labels);
//   when a set disappears its last values stay in the series ("retired"), so
//   the sum never falls while the series exists;
// - a series with no live set left is exported for `retired_ttl`, then
//   dropped;
// - past `max_series` distinct series, new ones fold into one overflow series
//   per port.
// A restart of the exporter forgets retired values: aggregated series then
// restart from the sum of the live sets, which Prometheus reads as a counter
// reset.
class SeriesBook {
 public:
  using Clock = std::chrono::steady_clock;
  // Label values in a fixed order chosen by the caller; device and port first.
  using Key = std::vector<std::string>;

  struct SetId {
    std::string device;
    uint32_t port = 0;
    uint32_t id = 0;
    auto operator<=>(const SetId&) const = default;
  };

  struct Observation {
    SetId set;
    Key key;
    const std::vector<nldev::HwCounter>* counters = nullptr;
  };

  struct Series {
    Key key;
    std::map<std::string, double> values;  // counter name -> monotonic value
    std::size_t live_sets = 0;
    bool overflow = false;
  };

  SeriesBook(std::size_t max_series, Clock::duration retired_ttl)
      : max_series_(max_series), retired_ttl_(retired_ttl) {}

  void set_limits(std::size_t max_series, Clock::duration retired_ttl) {
    max_series_ = max_series;
    retired_ttl_ = retired_ttl;
  }

  // Feeds one collection's sets (of every port) and returns the series to
  // export. `overflow_key` makes the overflow series' key from a set's key.
  std::vector<Series> update(const std::vector<Observation>& observations,
                             Key (*overflow_key)(const Key&), Clock::time_point now);

  // Sets folded into overflow series in the last update, per (device, port).
  const std::map<std::pair<std::string, uint32_t>, std::size_t>& folded() const { return folded_; }

 private:
  struct SetState {
    Key key;
    std::map<std::string, uint64_t> last;  // raw kernel values
    std::map<std::string, double> total;   // unwrapped, since first seen
  };
  struct SeriesState {
    std::map<std::string, double> retired;
    Clock::time_point last_live;
    bool overflow = false;
    // Within one update: the sum of the live sets' values, and their number.
    std::map<std::string, double> live_values;
    std::size_t live_sets = 0;
  };

  void retire(const SetState& s);

  std::size_t max_series_;
  Clock::duration retired_ttl_;
  std::map<SetId, SetState> sets_;
  std::map<Key, SeriesState> series_;
  std::map<std::pair<std::string, uint32_t>, std::size_t> folded_;
};

}  // namespace rdma_exporter
