#include "collectors/qp_counters/series_book.hpp"

namespace rdma_exporter {
namespace {
constexpr uint64_t k32 = 1ULL << 32;
}

void SeriesBook::retire(const SetState& s) {
  auto it = series_.find(s.key);
  if (it == series_.end()) return;
  for (const auto& [name, v] : s.total) it->second.retired[name] += v;
}

std::vector<SeriesBook::Series> SeriesBook::update(const std::vector<Observation>& observations,
                                                   Key (*overflow_key)(const Key&),
                                                   Clock::time_point now) {
  folded_.clear();
  std::map<SetId, SetState> next;

  for (const Observation& o : observations) {
    // Which series this set feeds: its own, or the overflow one when the
    // book is full and its series is new.
    auto series = series_.find(o.key);
    if (series == series_.end()) {
      if (series_.size() >= max_series_ && overflow_key != nullptr) {
        Key overflow = overflow_key(o.key);
        ++folded_[{o.set.device, o.set.port}];
        auto [it, inserted] = series_.try_emplace(std::move(overflow));
        if (inserted) it->second.overflow = it->first != o.key;
        series = it;
      } else {
        series = series_.try_emplace(o.key).first;
      }
    }
    series->second.last_live = now;
    const Key& key = series->first;

    SetState state;
    auto prev = sets_.find(o.set);
    if (prev != sets_.end() && prev->second.key == key) {
      state = std::move(prev->second);
      sets_.erase(prev);
    } else {
      if (prev != sets_.end()) {
        // The id now names another group (ids are reused): the old set is gone.
        retire(prev->second);
        sets_.erase(prev);
      }
      state.key = key;
    }
    for (const auto& c : *o.counters) {
      auto last = state.last.find(c.name);
      if (last == state.last.end()) {
        state.total[c.name] = static_cast<double>(c.value);
        state.last.emplace(c.name, c.value);
        continue;
      }
      double& total = state.total[c.name];
      if (c.value >= last->second) {
        total += static_cast<double>(c.value - last->second);
      } else if (last->second < k32 && c.value < k32) {
        total += static_cast<double>(c.value + k32 - last->second);  // 32-bit wrap
      } else {
        total += static_cast<double>(c.value);  // cannot fall: count from zero
      }
      last->second = c.value;
    }
    next.emplace(o.set, std::move(state));
  }
  // Sets not seen this time are gone: their values stay in their series.
  for (const auto& [id, s] : sets_) retire(s);
  sets_ = std::move(next);

  // Sum live sets into their series (every live set's series is in the
  // book), in the order of the sets, then the retired values.
  for (auto& [key, state] : series_) {
    state.live_values.clear();
    state.live_sets = 0;
  }
  for (const auto& [id, s] : sets_) {
    SeriesState& state = series_.find(s.key)->second;
    ++state.live_sets;
    for (const auto& [name, v] : s.total) state.live_values[name] += v;
  }
  std::vector<Series> result;
  result.reserve(series_.size());
  for (auto it = series_.begin(); it != series_.end();) {
    SeriesState& state = it->second;
    if (state.live_sets == 0 && now - state.last_live > retired_ttl_) {
      it = series_.erase(it);
      continue;
    }
    Series series;
    series.live_sets = state.live_sets;
    series.overflow = state.overflow;
    series.values = std::move(state.live_values);
    state.live_values.clear();
    for (const auto& [name, v] : state.retired) series.values[name] += v;
    if (!series.values.empty()) {
      series.key = it->first;
      result.push_back(std::move(series));
    }
    ++it;
  }
  return result;
}

}  // namespace rdma_exporter
