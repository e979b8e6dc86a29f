#include "common/kernel/netdev/codec.hpp"

#include <linux/ethtool.h>

#include <cstddef>
#include <cstring>

namespace rdma_exporter::ethtool {
namespace {

Error malformed(const std::string& what) {
  return Error{EBADMSG, "malformed ethtool answer: " + what};
}

template <typename T>
Bytes request(const T& header, std::size_t extra) {
  Bytes buf(sizeof(T) + extra, 0);
  std::memcpy(buf.data(), &header, sizeof(T));
  return buf;
}

// Reads the fixed part of an answer after checking its size and command.
// (The structs end in flexible arrays, so they are filled in place.)
template <typename T>
Status header_of(std::span<const uint8_t> answer, uint32_t cmd, const char* what, T& header) {
  if (answer.size() < sizeof(T)) {
    return malformed(std::string(what) + " is " + std::to_string(answer.size()) +
                     " bytes, shorter than its header");
  }
  std::memcpy(&header, answer.data(), sizeof(T));
  if (header.cmd != cmd) {
    return malformed(std::string(what) + " carries command " + std::to_string(header.cmd));
  }
  return ok_status();
}

}  // namespace

uint32_t room_for(uint32_t count) {
  return count + count / 2 + 16;
}

Bytes build_drvinfo() {
  ethtool_drvinfo d{};
  d.cmd = ETHTOOL_GDRVINFO;
  return request(d, 0);
}

Result<std::string> parse_drvinfo(std::span<const uint8_t> answer) {
  ethtool_drvinfo d{};
  if (Status s = header_of(answer, ETHTOOL_GDRVINFO, "ETHTOOL_GDRVINFO", d); !s) return s.error();
  return std::string(d.driver, strnlen(d.driver, sizeof d.driver));
}

Bytes build_stats_count() {
  ethtool_sset_info s{};
  s.cmd = ETHTOOL_GSSET_INFO;
  s.sset_mask = 1ULL << ETH_SS_STATS;
  return request(s, sizeof(uint32_t));
}

Result<std::optional<uint32_t>> parse_stats_count(std::span<const uint8_t> answer) {
  ethtool_sset_info info{};
  if (Status s = header_of(answer, ETHTOOL_GSSET_INFO, "ETHTOOL_GSSET_INFO", info); !s) {
    return s.error();
  }
  // The kernel clears the bit of a set the driver does not have, and writes
  // one count per bit left set, lowest bit first.
  if ((info.sset_mask & ~(1ULL << ETH_SS_STATS)) != 0) {
    return malformed("ETHTOOL_GSSET_INFO answers for sets it was not asked about");
  }
  if ((info.sset_mask & (1ULL << ETH_SS_STATS)) == 0) return std::optional<uint32_t>{};
  if (answer.size() < sizeof(ethtool_sset_info) + sizeof(uint32_t)) {
    return malformed("ETHTOOL_GSSET_INFO has no count");
  }
  uint32_t count = 0;
  std::memcpy(&count, answer.data() + offsetof(ethtool_sset_info, data), sizeof count);
  if (count > kMaxStats) {
    return malformed("ETHTOOL_GSSET_INFO counts " + std::to_string(count) + " statistics");
  }
  return std::optional<uint32_t>{count};
}

Bytes build_stat_names(uint32_t count, uint32_t capacity) {
  ethtool_gstrings g{};
  g.cmd = ETHTOOL_GSTRINGS;
  g.string_set = ETH_SS_STATS;
  g.len = count;
  return request(g, static_cast<std::size_t>(capacity) * ETH_GSTRING_LEN);
}

Result<std::vector<std::string>> parse_stat_names(std::span<const uint8_t> answer) {
  ethtool_gstrings g{};
  if (Status s = header_of(answer, ETHTOOL_GSTRINGS, "ETHTOOL_GSTRINGS", g); !s) return s.error();
  if (g.string_set != ETH_SS_STATS) {
    return malformed("ETHTOOL_GSTRINGS answers for string set " + std::to_string(g.string_set));
  }
  const std::size_t room = (answer.size() - sizeof(ethtool_gstrings)) / ETH_GSTRING_LEN;
  if (g.len > room) {
    return malformed("ETHTOOL_GSTRINGS reports " + std::to_string(g.len) +
                     " names for a buffer of " + std::to_string(room));
  }
  std::vector<std::string> names;
  names.reserve(g.len);
  const auto* p = reinterpret_cast<const char*>(answer.data() + sizeof(ethtool_gstrings));
  for (uint32_t i = 0; i < g.len; ++i, p += ETH_GSTRING_LEN) {
    names.emplace_back(p, strnlen(p, ETH_GSTRING_LEN));
  }
  return names;
}

Bytes build_stat_values(uint32_t count, uint32_t capacity) {
  ethtool_stats s{};
  s.cmd = ETHTOOL_GSTATS;
  s.n_stats = count;
  return request(s, static_cast<std::size_t>(capacity) * sizeof(uint64_t));
}

Result<std::vector<uint64_t>> parse_stat_values(std::span<const uint8_t> answer) {
  ethtool_stats st{};
  if (Status s = header_of(answer, ETHTOOL_GSTATS, "ETHTOOL_GSTATS", st); !s) return s.error();
  const std::size_t room = (answer.size() - sizeof(ethtool_stats)) / sizeof(uint64_t);
  if (st.n_stats > room) {
    return malformed("ETHTOOL_GSTATS reports " + std::to_string(st.n_stats) +
                     " values for a buffer of " + std::to_string(room));
  }
  std::vector<uint64_t> values(st.n_stats);
  if (!values.empty()) {
    std::memcpy(values.data(), answer.data() + sizeof(ethtool_stats),
                values.size() * sizeof(uint64_t));
  }
  return values;
}

}  // namespace rdma_exporter::ethtool
