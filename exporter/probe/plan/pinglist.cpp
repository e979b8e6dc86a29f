#include "exporter/probe/plan/pinglist.hpp"

#include <algorithm>
#include <unordered_map>

namespace rdma_exporter::probe {
namespace {

// The splitmix64 finalizer: every input bit reaches every output bit.
uint64_t mix64(uint64_t z) {
  z ^= z >> 30;
  z *= 0xbf58476d1ce4e5b9ULL;
  z ^= z >> 27;
  z *= 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return z;
}

// (a · b) mod m without overflow, for any 64-bit a and b (epoch numbers
// times slot counts may not fit in 64 bits). m > 0.
uint64_t mul_mod(uint64_t a, uint64_t b, uint64_t m) {
  a %= m;
  b %= m;
  uint64_t result = 0;
  while (b != 0) {
    if ((b & 1) != 0) result = result >= m - a ? result - (m - a) : result + a;
    a = a >= m - a ? a - (m - a) : a + a;
    b >>= 1;
  }
  return result;
}

// The rendezvous seed of one slot: of (epoch, self id, rail, slot).
uint64_t slot_seed(uint64_t epoch, const std::string& self_id, const std::string& rail,
                   std::size_t slot) {
  return mix64(stable_hash(rail, stable_hash(self_id, epoch)) + slot);
}

// The fleet as one host sees it: the distinct hosts other than self (first
// occurrence of an id), in groups ranked by group name.
struct Fleet {
  std::vector<std::vector<std::size_t>> group_hosts;  // by rank; indices into members
  std::size_t self_rank = 0;                          // a: self's group
  std::size_t hosts = 0;                              // self excluded
  bool self_listed = false;
};

Fleet group_fleet(std::span<const FleetMember> members, const std::string& self_id,
                  const std::string& self_group) {
  // Distinct hosts (first occurrence of an id) and their groups, numbered in
  // order of appearance for now.
  std::unordered_map<std::string_view, std::size_t> seen;
  seen.reserve(members.size());
  std::unordered_map<std::string_view, std::size_t> group_number;
  std::vector<std::string_view> group_names;
  std::vector<std::size_t> hosts;       // indices into members, self excluded
  std::vector<std::size_t> host_group;  // group number of hosts[i]
  hosts.reserve(members.size());
  host_group.reserve(members.size());
  Fleet fleet;
  std::string_view my_group = self_group;
  const auto number_of = [&](std::string_view name) {
    const auto [it, added] = group_number.emplace(name, group_names.size());
    if (added) group_names.push_back(name);
    return it->second;
  };
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (!seen.emplace(members[i].id, i).second) continue;
    if (members[i].id == self_id) {
      fleet.self_listed = true;
      my_group = members[i].group;
      continue;
    }
    hosts.push_back(i);
    host_group.push_back(number_of(members[i].group));
  }
  const std::size_t my_number = number_of(my_group);

  // Groups sorted by name: rank[number] is a group's index in that order.
  const std::size_t group_count = group_names.size();  // M
  std::vector<std::size_t> by_name(group_count);
  for (std::size_t g = 0; g < group_count; ++g) by_name[g] = g;
  std::sort(by_name.begin(), by_name.end(),
            [&](std::size_t x, std::size_t y) { return group_names[x] < group_names[y]; });
  std::vector<std::size_t> rank(group_count);
  for (std::size_t r = 0; r < group_count; ++r) rank[by_name[r]] = r;
  fleet.group_hosts.resize(group_count);
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    fleet.group_hosts[rank[host_group[i]]].push_back(hosts[i]);
  }
  fleet.self_rank = rank[my_number];
  fleet.hosts = hosts.size();
  return fleet;
}

// Picks the hosts of other groups one host probes on each rail: the slots
// of the plan, each a group and there the host that scores highest for the
// slot's seed. Its marks are cleared after every rail, ready for the next.
class RemotePicker {
 public:
  RemotePicker(std::span<const FleetMember> members, const Fleet& fleet, const std::string& self_id,
               uint64_t self_index, uint64_t group_size, const PinglistSettings& settings)
      : members_(members),
        fleet_(fleet),
        self_id_(self_id),
        p_(self_index),
        size_(group_size),
        k_(settings.remote_per_rail),
        epoch_(settings.epoch),
        picked_mark_(members.size(), 0),
        picked_in_group_(fleet.group_hosts.size(), 0) {}

  // The hosts of other groups for `rail`, not yet sorted; k < others.
  void pick(const std::string& rail, std::vector<std::size_t>& picked) {
    const std::size_t group_count = fleet_.group_hosts.size();
    const std::size_t a = fleet_.self_rank;
    // Here k < others < members.size(), so p·k + j < Q = S·k does not overflow.
    const uint64_t m = group_count - 1;
    const uint64_t slots = size_ * k_;  // Q
    const uint64_t window = (mul_mod(epoch_, slots, m) + stable_hash(rail) % m) % m;
    const uint64_t turn = mul_mod(epoch_, k_, slots);
    std::vector<std::size_t> touched;  // the groups of the hosts picked
    for (uint64_t j = 0; j < k_; ++j) {
      const uint64_t q = (p_ * k_ + j + turn) % slots;
      uint64_t o = (window + q % m) % m;
      std::size_t g = (a + 1 + o) % group_count;
      // A group whose hosts this host already probes on this rail passes the
      // slot on; some group has a host left, as k < others.
      while (picked_in_group_[g] == fleet_.group_hosts[g].size()) {
        o = (o + 1) % m;
        g = (a + 1 + o) % group_count;
      }
      const std::size_t best = best_in_group(g, slot_seed(epoch_, self_id_, rail, j));
      picked_mark_[best] = 1;
      ++picked_in_group_[g];
      picked.push_back(best);
      touched.push_back(g);
    }
    for (const std::size_t x : picked) picked_mark_[x] = 0;
    for (const std::size_t t : touched) picked_in_group_[t] = 0;
  }

 private:
  // The host of group g not picked yet that scores highest for `seed`
  // (ties to the smaller id).
  std::size_t best_in_group(std::size_t g, uint64_t seed) const {
    std::size_t best = members_.size();
    uint64_t best_score = 0;
    for (const std::size_t candidate : fleet_.group_hosts[g]) {
      if (picked_mark_[candidate] != 0) continue;
      const uint64_t score = stable_hash(members_[candidate].id, seed);
      if (best == members_.size() || score > best_score ||
          (score == best_score && members_[candidate].id < members_[best].id)) {
        best = candidate;
        best_score = score;
      }
    }
    return best;
  }

  std::span<const FleetMember> members_;
  const Fleet& fleet_;
  const std::string& self_id_;
  uint64_t p_;
  uint64_t size_;
  uint64_t k_;
  uint64_t epoch_;
  std::vector<char> picked_mark_;
  std::vector<std::size_t> picked_in_group_;
};

}  // namespace

uint64_t stable_hash(std::string_view bytes, uint64_t seed) {
  uint64_t h = 0xcbf29ce484222325ULL ^ seed;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return mix64(h);
}

uint64_t pinglist_epoch(std::chrono::system_clock::time_point now,
                        std::chrono::milliseconds length) {
  if (length.count() <= 0) return 0;
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  if (ms < 0) return 0;
  return static_cast<uint64_t>(ms / length.count());
}

Pinglist compute_pinglist(std::span<const FleetMember> members, const std::string& self_id,
                          const std::string& self_group, std::span<const std::string> rails,
                          const PinglistSettings& settings) {
  const Fleet fleet = group_fleet(members, self_id, self_group);
  const std::size_t a = fleet.self_rank;

  const auto by_id = [&](std::size_t x, std::size_t y) { return members[x].id < members[y].id; };
  Pinglist out;
  out.group = fleet.group_hosts[a];
  std::sort(out.group.begin(), out.group.end(), by_id);

  // S counts self, listed or not; p is self's index among them by id.
  const uint64_t size = out.group.size() + 1;
  uint64_t p = 0;
  if (fleet.self_listed) {
    p = static_cast<uint64_t>(
        std::partition_point(out.group.begin(), out.group.end(),
                             [&](std::size_t x) { return members[x].id < self_id; }) -
        out.group.begin());
  } else {
    p = stable_hash(self_id) % size;
  }

  const std::size_t others = fleet.hosts - out.group.size();
  const uint64_t k = settings.remote_per_rail;
  RemotePicker picker(members, fleet, self_id, p, size, settings);
  for (const std::string& rail : rails) {
    auto [entry, added] = out.remote.try_emplace(rail);
    if (!added) continue;
    std::vector<std::size_t>& picked = entry->second;
    if (others == 0 || k == 0) continue;
    if (others <= k) {
      // Fewer hosts elsewhere than slots: all of them.
      for (std::size_t g = 0; g < fleet.group_hosts.size(); ++g) {
        if (g != a) {
          picked.insert(picked.end(), fleet.group_hosts[g].begin(), fleet.group_hosts[g].end());
        }
      }
    } else {
      picker.pick(rail, picked);
    }
    std::sort(picked.begin(), picked.end(), by_id);
  }
  return out;
}

}  // namespace rdma_exporter::probe
