#pragma once

// Table-driven mapping of driver statistics (ethtool -S names) to the
// rdma_netdev_* metrics. The built-in tables (mapping.cpp) cover mlx5_core,
// bnxt_en and ice; configured mappings come first. docs/congestion.md
// explains how to add one.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/ethtool/options.hpp"
#include "common/pattern.hpp"
#include "common/result.hpp"

namespace rdma_exporter::ethtool {

// A metric family a statistic can map to, and the labels it carries beside
// device, port and netdev.
struct Family {
  // The priority label comes from the stat pattern's first capture group.
  enum class Priority { none, required, optional };
  const char* id;      // as written in the configuration ("pfc_pause_frames")
  const char* metric;  // "rdma_netdev_pfc_pause_frames_total"
  const char* help;
  Priority priority;
  bool direction;  // needs direction rx|tx
  bool reason;     // needs a reason
};

const std::vector<Family>& families();
const Family* family_by_id(const std::string& id);

// The built-in mappings, in order.
const std::vector<EthtoolMapping>& builtin_mappings();

// Why a mapping cannot be used ("" when it can): unknown metric, a bad
// regular expression, a per-priority metric without a capture group, a
// missing or unexpected direction or reason, a scale that is not positive.
std::string mapping_problem(const EthtoolMapping& m);

// Where one statistic goes: the family and its extra labels.
struct Target {
  const Family* family = nullptr;  // nullptr: unmapped
  std::string priority;            // empty when the family has none
  std::string direction;
  std::string reason;
  double scale = 1;
};

class StatMapper {
 public:
  // The configured mappings (already checked with mapping_problem) followed
  // by the built-in ones.
  explicit StatMapper(const std::vector<EthtoolMapping>& configured);

  // For every name, the first mapping whose driver and statistic patterns
  // match. A per-priority mapping whose capture is not a priority number
  // leaves the statistic unmapped.
  std::vector<Target> resolve(const std::string& driver,
                              const std::vector<std::string>& names) const;

 private:
  struct Compiled {
    const Family* family;
    Pattern driver;
    Pattern stat;
    std::string direction;
    std::string reason;
    double scale;
  };
  std::vector<Compiled> rules_;
};

}  // namespace rdma_exporter::ethtool
