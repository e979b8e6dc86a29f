#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/kernel/nldev/model.hpp"

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
//
// Cost: an update is linear in the observations and their counters. Sets,
// series and counter names are found by hashing (names are interned to small
// ids), or without it when a set comes at the same place, with the same key
// and its counters in the same order as in the last update (the usual case).
// The series are sorted again only after series were added.
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

  // A series' values by counter name, in the order of the names. Iterating
  // yields pair<const std::string&, double>; the names are the book's and
  // stay valid while the book lives.
  class Values {
   public:
    class const_iterator {
     public:
      using value_type = std::pair<const std::string&, double>;
      explicit const_iterator(const std::pair<const std::string*, double>* p) : p_(p) {}
      value_type operator*() const { return {*p_->first, p_->second}; }
      const_iterator& operator++() {
        ++p_;
        return *this;
      }
      bool operator==(const const_iterator&) const = default;

     private:
      const std::pair<const std::string*, double>* p_;
    };
    const_iterator begin() const { return const_iterator(entries_.data()); }
    const_iterator end() const { return const_iterator(entries_.data() + entries_.size()); }
    std::size_t size() const { return entries_.size(); }
    bool empty() const { return entries_.empty(); }
    // The value of counter `name`; throws std::out_of_range when absent.
    double at(std::string_view name) const;

   private:
    friend class SeriesBook;
    std::vector<std::pair<const std::string*, double>> entries_;
  };

  struct Series {
    Key key;
    Values values;  // counter name -> monotonic value
    std::size_t live_sets = 0;
    bool overflow = false;
  };

  SeriesBook(std::size_t max_series, Clock::duration retired_ttl)
      : max_series_(max_series), retired_ttl_(retired_ttl) {}
  // The book's sets point at its series: it moves, it is not copied.
  SeriesBook(const SeriesBook&) = delete;
  SeriesBook& operator=(const SeriesBook&) = delete;
  SeriesBook(SeriesBook&&) = default;
  SeriesBook& operator=(SeriesBook&&) = default;

  void set_limits(std::size_t max_series, Clock::duration retired_ttl) {
    max_series_ = max_series;
    retired_ttl_ = retired_ttl;
  }

  // Feeds one collection's sets (of every port) and returns the series to
  // export, ordered by key. `overflow_key` makes the overflow series' key
  // from a set's key; it must depend on that key alone (a set that keeps
  // its key keeps its overflow series without another call).
  std::vector<Series> update(const std::vector<Observation>& observations,
                             Key (*overflow_key)(const Key&), Clock::time_point now);

  // Sets folded into overflow series in the last update, per (device, port).
  const std::map<std::pair<std::string, uint32_t>, std::size_t>& folded() const { return folded_; }

 private:
  using NameId = uint32_t;
  // Values by interned counter name; a set or a series has a handful.
  using NamedValues = std::vector<std::pair<NameId, double>>;

  struct KeyHash {
    std::size_t operator()(const Key& key) const;
  };
  struct SetIdHash {
    std::size_t operator()(const SetId& id) const;
  };

  struct SeriesState {
    NamedValues retired;
    Clock::time_point last_live;
    bool overflow = false;
    // Within one update: the sum of the live sets' values, and their number.
    NamedValues live_values;
    std::size_t live_sets = 0;
  };
  using SeriesMap = std::unordered_map<Key, SeriesState, KeyHash>;
  using SeriesEntry = SeriesMap::value_type;

  struct Counter {
    NameId name;
    uint64_t last;  // raw kernel value
    double total;   // unwrapped, since first seen
  };
  struct SetState {
    SeriesEntry* series = nullptr;  // the series it feeds (never dropped while the set lives)
    std::vector<Counter> counters;  // in the order they first appeared
    uint64_t seen = 0;              // the last update that saw the set
    // When the set was folded into `series`: its own key, and the
    // `series_epoch_` then (0 when not folded).
    Key folded_from;
    uint64_t folded_epoch = 0;
  };

  using SetMap = std::unordered_map<SetId, SetState, SetIdHash>;
  using SetEntry = SetMap::value_type;

  NameId intern(const std::string& name);
  void retire(const SetState& s);
  // The steps of update(), in order.
  // The set of an observation: the one at the same place last time, or
  // found (or made: `new_set`) by its id.
  SetEntry* find_set(std::size_t pos, const std::vector<SetEntry*>& last_positions, const SetId& id,
                     bool& new_set);
  // Takes one observation into its set and the set's series; false when
  // the set was already seen in this update.
  bool observe(const Observation& o, SetEntry* set, bool new_set, Key (*overflow_key)(const Key&),
               Clock::time_point now);
  // The series a set feeds: its own, or an overflow series (`folded`).
  SeriesEntry* series_for(const SetState& state, const Observation& o,
                          Key (*overflow_key)(const Key&), bool& folded);
  void count_folded(const SetId& id);
  // The set's counters, unwrapped (32-bit wraps, resets) into totals.
  void accumulate(SetState& state, const std::vector<nldev::HwCounter>& counters);
  // Sets not seen in this update are gone: retired into their series.
  void forget_unseen_sets();
  // Orders the series, drops those retired longer than the TTL, and gives
  // each its values.
  std::vector<Series> render(Clock::time_point now);

  std::size_t max_series_;
  Clock::duration retired_ttl_;
  uint64_t generation_ = 0;
  // Counts the additions of series (and changes of the overflow function):
  // a key that had no series has none while it stays the same.
  uint64_t series_epoch_ = 1;
  Key (*overflow_key_)(const Key&) = nullptr;
  SetMap sets_;
  // The sets in the order of the last update's observations.
  std::vector<SetEntry*> set_positions_;
  SeriesMap series_;
  // Every series, ordered by key; rebuilt after series were added.
  std::vector<SeriesEntry*> order_;
  bool order_stale_ = false;
  // Interned counter names (each string in its own allocation: it never
  // moves), and the place of each in the names' order.
  std::vector<std::unique_ptr<const std::string>> names_;
  std::unordered_map<std::string, NameId> name_ids_;
  std::vector<uint32_t> name_rank_;
  NamedValues scratch_;  // one series' values while they are put in order
  std::map<std::pair<std::string, uint32_t>, std::size_t> folded_;
  // The port of the last folded set, within one update.
  std::map<std::pair<std::string, uint32_t>, std::size_t>::iterator fold_ = folded_.end();
};

}  // namespace rdma_exporter
