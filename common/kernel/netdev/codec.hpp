#pragma once

// Pure codecs for the ethtool commands the exporter uses through SIOCETHTOOL.
// Each request is a buffer in the kernel's struct layout
// (<linux/ethtool.h>); the kernel fills it in place and the parsers read it
// back, checking every length. No I/O.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace rdma_exporter::ethtool {

using Bytes = std::vector<uint8_t>;

// More statistics than this on one netdev is not a plausible answer.
inline constexpr uint32_t kMaxStats = 1U << 16;

// The kernel writes as many strings or values as the driver has when it
// answers, which may be more than it had a moment before: buffers get this
// much room for `count` entries so a growing set can never overrun them.
uint32_t room_for(uint32_t count);

// ETHTOOL_GDRVINFO: the driver's name ("mlx5_core", "bnxt_en", "veth").
Bytes build_drvinfo();
Result<std::string> parse_drvinfo(std::span<const uint8_t> answer);

// ETHTOOL_GSSET_INFO for ETH_SS_STATS: how many statistics the driver has;
// nullopt when it has none.
Bytes build_stats_count();
Result<std::optional<uint32_t>> parse_stats_count(std::span<const uint8_t> answer);

// ETHTOOL_GSTRINGS for ETH_SS_STATS, with room for `capacity` names.
Bytes build_stat_names(uint32_t count, uint32_t capacity);
Result<std::vector<std::string>> parse_stat_names(std::span<const uint8_t> answer);

// ETHTOOL_GSTATS, with room for `capacity` values.
Bytes build_stat_values(uint32_t count, uint32_t capacity);
Result<std::vector<uint64_t>> parse_stat_values(std::span<const uint8_t> answer);

}  // namespace rdma_exporter::ethtool
