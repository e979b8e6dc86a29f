#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "exporter/probe/plan/options.hpp"

// Pinglists: which hosts of the fleet this host probes, decided by every host
// on its own, with no controller. Every exporter reads the same target list;
// each computes from it, its own id and the epoch number the part of one
// global plan that is its own, so all hosts agree on the plan as long as they
// read the same list (in any order).
//
// The plan, per epoch:
// - Inside the own group (rack): every other host of the group, on every
//   rail: a full mesh.
// - Other groups: on each local rail, `remote_per_rail` (k) hosts of other
//   groups, rotating every epoch. Groups are sorted by name; a is the own
//   group's index, M the number of groups, S the number of hosts of the own
//   group (self included) and p this host's index among them sorted by id.
//   The group has Q = S·k slots per rail; slot j of host p is q = p·k + j,
//   and in epoch e it is moved along to q_e = (q + e·k) mod Q, so that every
//   host of the group visits every part of the group's window over the
//   epochs. Its offset is o = (q_e + e·Q + h(rail)) mod (M − 1) and it probes
//   group (a + 1 + o) mod M, never its own. In one epoch the group's slots
//   fill Q consecutive offsets, the next epoch the next Q: every ordered pair
//   of groups (A → B) is probed on every rail within ceil((M − 1) / (S·k))
//   epochs, S being A's size. h(rail), a hash of the rail's label, staggers
//   the rails, so that a pair is probed on some rail sooner.
//   The host inside the target group is picked by rendezvous hashing: the
//   highest stable_hash(candidate id, seed of (epoch, self id, rail, j))
//   wins, so probes into a group spread evenly over its hosts. A host is
//   probed at most once per rail: when the target group has no host left
//   that this host has not picked on the rail, the slot moves on to the next
//   offset.
// - Hosts without the group label are in group "", an ordinary group; with
//   no labels at all every host is in it, and the plan is a full mesh.
// - A host that is not in the list (one that only probes) is in
//   `self_group`, counts in its group's size S and takes
//   p = stable_hash(self id) mod S.
namespace rdma_exporter::probe {

// A host of the fleet as the target list names it.
struct FleetMember {
  std::string id;     // the target's address, host:port
  std::string group;  // its group (rack) label; "" without one
};

struct PinglistSettings {
  // k: hosts of other groups per local rail and epoch (probe.pinglist's).
  std::size_t remote_per_rail = PinglistOptions{}.remote_per_rail;
  uint64_t epoch = 0;  // pinglist_epoch()
};

// What one host probes in one epoch. Indices are into the members given to
// compute_pinglist (the first occurrence of a duplicated id).
struct Pinglist {
  // The own group's hosts other than self, sorted by id: probed on every rail.
  std::vector<std::size_t> group;
  // By local rail label (one entry per rail given, possibly empty): the hosts
  // of other groups probed on that rail this epoch, distinct, sorted by id.
  std::map<std::string, std::vector<std::size_t>> remote;
  bool operator==(const Pinglist&) const = default;
};

// This host's part of the plan above. `members` may be in any order and may
// repeat an id (the first occurrence counts, with its group). Self's group is
// its entry's group when `self_id` is in `members`, else `self_group`. With
// fewer than k hosts in other groups, every one of them is probed. One pass
// over the list with hash tables, then sorting the group names and the own
// group: about linear in the number of members.
Pinglist compute_pinglist(std::span<const FleetMember> members, const std::string& self_id,
                          const std::string& self_group, std::span<const std::string> rails,
                          const PinglistSettings& settings);

// The epoch `now` is in: floor(unix time / length); 0 before 1970 or when
// `length` is not positive.
uint64_t pinglist_epoch(std::chrono::system_clock::time_point now,
                        std::chrono::milliseconds length);

// A 64-bit hash that is the same on every host, build and platform: FNV-1a
// over the bytes, starting from the FNV offset basis XOR `seed`, then the
// splitmix64 finalizer (z ^= z >> 30; z *= 0xbf58476d1ce4e5b9; z ^= z >> 27;
// z *= 0x94d049bb133111eb; z ^= z >> 31).
uint64_t stable_hash(std::string_view bytes, uint64_t seed = 0);

}  // namespace rdma_exporter::probe
