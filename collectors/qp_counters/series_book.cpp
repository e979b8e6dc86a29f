#include "collectors/qp_counters/series_book.hpp"

#include <set>

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
    Key key = o.key;
    if (series_.find(key) == series_.end()) {
      if (series_.size() >= max_series_ && overflow_key != nullptr) {
        key = overflow_key(o.key);
        ++folded_[{o.set.device, o.set.port}];
      }
      auto [it, inserted] = series_.try_emplace(key);
      if (inserted) it->second.overflow = key != o.key;
    }
    series_[key].last_live = now;

    SetState state;
    auto prev = sets_.find(o.set);
    if (prev != sets_.end() && prev->second.key == key) {
      state = std::move(prev->second);
      sets_.erase(prev);
    } else if (prev != sets_.end()) {
      // The id now names another group (ids are reused): the old set is gone.
      retire(prev->second);
      sets_.erase(prev);
    }
    state.key = key;
    for (const auto& c : *o.counters) {
      auto last = state.last.find(c.name);
      if (last == state.last.end()) {
        state.total[c.name] = static_cast<double>(c.value);
      } else if (c.value >= last->second) {
        state.total[c.name] += static_cast<double>(c.value - last->second);
      } else if (last->second < k32 && c.value < k32) {
        state.total[c.name] += static_cast<double>(c.value + k32 - last->second);  // 32-bit wrap
      } else {
        state.total[c.name] += static_cast<double>(c.value);  // cannot fall: count from zero
      }
      state.last[c.name] = c.value;
    }
    next.emplace(o.set, std::move(state));
  }
  // Sets not seen this time are gone: their values stay in their series.
  for (const auto& [id, s] : sets_) retire(s);
  sets_ = std::move(next);

  // Sum live sets into their series.
  std::map<Key, Series> out;
  for (const auto& [id, s] : sets_) {
    Series& series = out[s.key];
    ++series.live_sets;
    for (const auto& [name, v] : s.total) series.values[name] += v;
  }
  for (auto it = series_.begin(); it != series_.end();) {
    auto o = out.find(it->first);
    if (o == out.end() && now - it->second.last_live > retired_ttl_) {
      it = series_.erase(it);
      continue;
    }
    Series& series = out[it->first];
    series.key = it->first;
    series.overflow = it->second.overflow;
    for (const auto& [name, v] : it->second.retired) series.values[name] += v;
    ++it;
  }
  std::vector<Series> result;
  result.reserve(out.size());
  for (auto& [key, s] : out) {
    if (s.values.empty()) continue;
    result.push_back(std::move(s));
  }
  return result;
}

}  // namespace rdma_exporter
