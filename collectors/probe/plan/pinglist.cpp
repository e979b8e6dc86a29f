#include "collectors/probe/plan/pinglist.hpp"

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
  bool self_listed = false;
  std::string_view my_group = self_group;
  const auto number_of = [&](std::string_view name) {
    const auto [it, added] = group_number.emplace(name, group_names.size());
    if (added) group_names.push_back(name);
    return it->second;
  };
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (!seen.emplace(members[i].id, i).second) continue;
    if (members[i].id == self_id) {
      self_listed = true;
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
  std::vector<std::vector<std::size_t>> group_hosts(group_count);  // by rank
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    group_hosts[rank[host_group[i]]].push_back(hosts[i]);
  }
  const std::size_t a = rank[my_number];

  const auto by_id = [&](std::size_t x, std::size_t y) { return members[x].id < members[y].id; };
  Pinglist out;
  out.group = group_hosts[a];
  std::sort(out.group.begin(), out.group.end(), by_id);

  // S counts self, listed or not; p is self's index among them by id.
  const uint64_t size = out.group.size() + 1;
  uint64_t p = 0;
  if (self_listed) {
    p = static_cast<uint64_t>(
        std::partition_point(out.group.begin(), out.group.end(),
                             [&](std::size_t x) { return members[x].id < self_id; }) -
        out.group.begin());
  } else {
    p = stable_hash(self_id) % size;
  }

  const std::size_t others = hosts.size() - out.group.size();
  const uint64_t k = settings.remote_per_rail;
  const uint64_t epoch = settings.epoch;
  std::vector<char> picked_mark(members.size(), 0);
  std::vector<std::size_t> picked_in_group(group_count, 0);
  for (const std::string& rail : rails) {
    auto [entry, added] = out.remote.try_emplace(rail);
    if (!added) continue;
    std::vector<std::size_t>& picked = entry->second;
    if (others == 0 || k == 0) continue;
    if (others <= k) {
      // Fewer hosts elsewhere than slots: all of them.
      for (std::size_t g = 0; g < group_count; ++g) {
        if (g != a) picked.insert(picked.end(), group_hosts[g].begin(), group_hosts[g].end());
      }
      std::sort(picked.begin(), picked.end(), by_id);
      continue;
    }
    // Here k < others < members.size(), so p·k + j < Q = S·k does not overflow.
    const uint64_t m = group_count - 1;
    const uint64_t slots = size * k;  // Q
    const uint64_t window = (mul_mod(epoch, slots, m) + stable_hash(rail) % m) % m;
    const uint64_t turn = mul_mod(epoch, k, slots);
    std::vector<std::size_t> touched;  // the groups of the hosts picked
    for (uint64_t j = 0; j < k; ++j) {
      const uint64_t q = (p * k + j + turn) % slots;
      uint64_t o = (window + q % m) % m;
      std::size_t g = (a + 1 + o) % group_count;
      // A group whose hosts this host already probes on this rail passes the
      // slot on; some group has a host left, as k < others.
      while (picked_in_group[g] == group_hosts[g].size()) {
        o = (o + 1) % m;
        g = (a + 1 + o) % group_count;
      }
      const uint64_t seed = slot_seed(epoch, self_id, rail, j);
      std::size_t best = members.size();
      uint64_t best_score = 0;
      for (const std::size_t candidate : group_hosts[g]) {
        if (picked_mark[candidate] != 0) continue;
        const uint64_t score = stable_hash(members[candidate].id, seed);
        if (best == members.size() || score > best_score ||
            (score == best_score && members[candidate].id < members[best].id)) {
          best = candidate;
          best_score = score;
        }
      }
      picked_mark[best] = 1;
      ++picked_in_group[g];
      picked.push_back(best);
      touched.push_back(g);
    }
    for (const std::size_t x : picked) picked_mark[x] = 0;
    for (const std::size_t t : touched) picked_in_group[t] = 0;
    std::sort(picked.begin(), picked.end(), by_id);
  }
  return out;
}

}  // namespace rdma_exporter::probe
