#include "collectors/qp_counters/series_book.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <stdexcept>

namespace rdma_exporter {
namespace {
constexpr uint64_t k32 = 1ULL << 32;

std::size_t mix(std::size_t h, std::size_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

// Adds `v` to the value named `name` (a new one when absent).
void add(std::vector<std::pair<uint32_t, double>>& values, uint32_t name, double v) {
  for (auto& [n, value] : values) {
    if (n == name) {
      value += v;
      return;
    }
  }
  values.emplace_back(name, v);
}

}  // namespace

double SeriesBook::Values::at(std::string_view name) const {
  for (const auto& [n, v] : entries_) {
    if (*n == name) return v;
  }
  throw std::out_of_range("no counter " + std::string(name) + " in the series");
}

std::size_t SeriesBook::KeyHash::operator()(const Key& key) const {
  std::size_t h = key.size();
  for (const auto& s : key) h = mix(h, std::hash<std::string_view>{}(s));
  return h;
}

std::size_t SeriesBook::SetIdHash::operator()(const SetId& id) const {
  return mix(mix(std::hash<std::string_view>{}(id.device), id.port), id.id);
}

SeriesBook::NameId SeriesBook::intern(const std::string& name) {
  auto it = name_ids_.find(name);
  if (it != name_ids_.end()) return it->second;
  const auto id = static_cast<NameId>(names_.size());
  names_.push_back(std::make_unique<const std::string>(name));
  name_ids_.emplace(name, id);
  // A new name: the places of the names in their order, again.
  std::vector<NameId> by_name(names_.size());
  std::iota(by_name.begin(), by_name.end(), NameId{0});
  std::sort(by_name.begin(), by_name.end(),
            [this](NameId a, NameId b) { return *names_[a] < *names_[b]; });
  name_rank_.resize(names_.size());
  for (std::size_t r = 0; r < by_name.size(); ++r)
    name_rank_[by_name[r]] = static_cast<uint32_t>(r);
  return id;
}

void SeriesBook::retire(const SetState& s) {
  if (s.series == nullptr) return;  // a set is given its series when first seen
  for (const Counter& c : s.counters) add(s.series->second.retired, c.name, c.total);
}

void SeriesBook::count_folded(const SetId& id) {
  if (fold_ == folded_.end() || fold_->first.second != id.port || fold_->first.first != id.device) {
    fold_ = folded_.try_emplace({id.device, id.port}, 0).first;
  }
  ++fold_->second;
}

SeriesBook::SetEntry* SeriesBook::find_set(std::size_t pos,
                                           const std::vector<SetEntry*>& last_positions,
                                           const SetId& id, bool& new_set) {
  // Collections list the sets in the same order: try the set at the same
  // place last time before hashing.
  new_set = false;
  if (pos < last_positions.size() && last_positions[pos]->first == id) return last_positions[pos];
  auto [it, inserted] = sets_.try_emplace(id);
  new_set = inserted;
  return &*it;
}

SeriesBook::SeriesEntry* SeriesBook::series_for(const SetState& state, const Observation& o,
                                                Key (*overflow_key)(const Key&), bool& folded) {
  // Which series this set feeds: its own, or the overflow one when the
  // book is full and its series is new. Most sets feed the same series
  // as last time: that one is tried first.
  folded = false;
  const bool full = series_.size() >= max_series_ && overflow_key != nullptr;
  if (state.series != nullptr && state.series->first == o.key) return state.series;
  if (state.series != nullptr && full && state.folded_epoch == series_epoch_ &&
      state.folded_from == o.key) {
    // Folded last time, and no series was added since: the key still has
    // no series of its own, and folds into the same overflow series.
    folded = true;
    count_folded(o.set);
    return state.series;
  }
  if (auto found = series_.find(o.key); found != series_.end()) return &*found;
  if (full) {
    count_folded(o.set);
    auto [it, inserted] = series_.try_emplace(overflow_key(o.key));
    if (inserted) {
      it->second.overflow = it->first != o.key;
      order_stale_ = true;
      ++series_epoch_;
    }
    folded = true;
    return &*it;
  }
  order_stale_ = true;
  ++series_epoch_;
  return &*series_.try_emplace(o.key).first;
}

void SeriesBook::accumulate(SetState& state, const std::vector<nldev::HwCounter>& counters) {
  for (std::size_t i = 0; i < counters.size(); ++i) {
    const nldev::HwCounter& c = counters[i];
    // Sets list their counters in the same order each time: try the same
    // place first.
    Counter* counter = nullptr;
    if (i < state.counters.size() && *names_[state.counters[i].name] == c.name) {
      counter = &state.counters[i];
    } else {
      const NameId name = intern(c.name);
      for (Counter& k : state.counters) {
        if (k.name == name) {
          counter = &k;
          break;
        }
      }
      if (counter == nullptr) {
        state.counters.push_back({name, c.value, static_cast<double>(c.value)});
        continue;
      }
    }
    double& total = counter->total;
    if (c.value >= counter->last) {
      total += static_cast<double>(c.value - counter->last);
    } else if (counter->last < k32 && c.value < k32) {
      total += static_cast<double>(c.value + k32 - counter->last);  // 32-bit wrap
    } else {
      total += static_cast<double>(c.value);  // cannot fall: count from zero
    }
    counter->last = c.value;
  }
}

bool SeriesBook::observe(const Observation& o, SetEntry* set, bool new_set,
                         Key (*overflow_key)(const Key&), Clock::time_point now) {
  SetState& state = set->second;
  bool folded = false;
  SeriesEntry* series = series_for(state, o, overflow_key, folded);
  SeriesState& series_state = series->second;
  series_state.last_live = now;

  if (state.seen == generation_) return false;  // the same set twice: the first one counts
  if (!new_set && state.series != series) {
    // The id now names another group (ids are reused): the old set is gone.
    retire(state);
    state.counters.clear();
  }
  state.series = series;
  state.seen = generation_;
  if (!folded) {
    state.folded_epoch = 0;
  } else if (state.folded_epoch != series_epoch_ || state.folded_from != o.key) {
    state.folded_from = o.key;
    state.folded_epoch = series_epoch_;
  }
  accumulate(state, *o.counters);

  // A set seen is final for this update: sum it into its series.
  ++series_state.live_sets;
  for (const Counter& k : state.counters) add(series_state.live_values, k.name, k.total);
  return true;
}

void SeriesBook::forget_unseen_sets() {
  // Sets not seen this time are gone: their values stay in their series.
  for (auto it = sets_.begin(); it != sets_.end();) {
    if (it->second.seen != generation_) {
      retire(it->second);
      it = sets_.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<SeriesBook::Series> SeriesBook::render(Clock::time_point now) {
  if (order_stale_) {
    order_.clear();
    order_.reserve(series_.size());
    for (SeriesEntry& e : series_) order_.push_back(&e);
    std::sort(order_.begin(), order_.end(),
              [](const SeriesEntry* a, const SeriesEntry* b) { return a->first < b->first; });
    order_stale_ = false;
  }
  std::vector<Series> result;
  result.reserve(order_.size());
  std::size_t kept = 0;
  for (SeriesEntry* e : order_) {
    SeriesState& state = e->second;
    if (state.live_sets == 0 && now - state.last_live > retired_ttl_) {
      series_.erase(series_.find(e->first));
      continue;
    }
    order_[kept++] = e;
    NamedValues& values = scratch_;
    values.assign(state.live_values.begin(), state.live_values.end());
    for (const auto& [name, v] : state.retired) add(values, name, v);
    if (values.empty()) continue;
    std::sort(values.begin(), values.end(), [this](const auto& a, const auto& b) {
      return name_rank_[a.first] < name_rank_[b.first];
    });
    Series out;
    out.key = e->first;
    out.live_sets = state.live_sets;
    out.overflow = state.overflow;
    out.values.entries_.reserve(values.size());
    for (const auto& [name, v] : values) out.values.entries_.emplace_back(names_[name].get(), v);
    result.push_back(std::move(out));
  }
  order_.resize(kept);
  return result;
}

std::vector<SeriesBook::Series> SeriesBook::update(const std::vector<Observation>& observations,
                                                   Key (*overflow_key)(const Key&),
                                                   Clock::time_point now) {
  folded_.clear();
  fold_ = folded_.end();
  ++generation_;
  // `order_` holds every series here: it was rebuilt at the end of the last
  // update, and series are only added or dropped within one.
  for (SeriesEntry* e : order_) {
    e->second.live_values.clear();
    e->second.live_sets = 0;
  }
  if (overflow_key != overflow_key_) {
    overflow_key_ = overflow_key;
    ++series_epoch_;
  }

  std::size_t seen_sets = 0;
  std::vector<SetEntry*> last_positions;
  last_positions.swap(set_positions_);
  set_positions_.reserve(observations.size());
  for (std::size_t pos = 0; pos < observations.size(); ++pos) {
    const Observation& o = observations[pos];
    bool new_set = false;
    SetEntry* set = find_set(pos, last_positions, o.set, new_set);
    set_positions_.push_back(set);
    if (observe(o, set, new_set, overflow_key, now)) ++seen_sets;
  }
  if (seen_sets != sets_.size()) forget_unseen_sets();
  return render(now);
}

}  // namespace rdma_exporter
