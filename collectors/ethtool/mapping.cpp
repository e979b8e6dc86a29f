#include "collectors/ethtool/mapping.hpp"

#include <algorithm>

#include "common/pattern.hpp"

namespace rdma_exporter::ethtool {
namespace {

constexpr double kMicroseconds = 1e-6;

bool is_label_value(const std::string& v) {
  return !v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// An 802.1p priority: one digit, 0 to 7.
bool is_priority(const std::string& v) {
  return v.size() == 1 && v[0] >= '0' && v[0] <= '7';
}

}  // namespace

const std::vector<Family>& families() {
  using P = Family::Priority;
  static const std::vector<Family> all = {
      {"pfc_pause_frames", "rdma_netdev_pfc_pause_frames_total",
       "PFC pause frames per priority, received (rx: the peer paused this port) or sent (tx: "
       "this port paused the peer), from the driver's ethtool statistics.",
       P::required, true, false},
      {"pfc_pause_duration_seconds", "rdma_netdev_pfc_pause_duration_seconds_total",
       "Time a priority was paused, in seconds: rx paused by the peer, tx pausing the peer, "
       "from the driver's ethtool statistics.",
       P::required, true, false},
      {"priority_bytes", "rdma_netdev_priority_bytes_total",
       "Bytes per priority on the physical port, from the driver's ethtool statistics.",
       P::required, true, false},
      {"priority_packets", "rdma_netdev_priority_packets_total",
       "Packets per priority on the physical port, from the driver's ethtool statistics.",
       P::required, true, false},
      {"priority_discards", "rdma_netdev_priority_discards_total",
       "Received packets discarded per priority, by reason, from the driver's ethtool "
       "statistics.",
       P::required, false, true},
      {"ecn_marked_packets", "rdma_netdev_ecn_marked_packets_total",
       "Packets the NIC marked with ECN Congestion Experienced, per priority where the driver "
       "counts them so, from the driver's ethtool statistics.",
       P::optional, false, false},
      {"cnp_packets", "rdma_netdev_cnp_packets_total",
       "RoCE congestion notification packets (CNP) counted by the NIC driver, from its ethtool "
       "statistics.",
       P::none, true, false},
      {"discards", "rdma_netdev_discards_total",
       "Packets the NIC discarded, by reason, from the driver's ethtool statistics.", P::none,
       false, true},
  };
  return all;
}

const Family* family_by_id(const std::string& id) {
  for (const auto& f : families()) {
    if (id == f.id) return &f;
  }
  return nullptr;
}

// The built-in tables, one per driver. Names and meanings come from:
// - mlx5_core: Documentation/networking/device_drivers/ethernet/mellanox/mlx5/
//   counters.rst ("Priority Port Counters", "Physical Port Counters"); pause
//   durations are in microseconds.
// - bnxt_en: drivers/net/ethernet/broadcom/bnxt/bnxt_ethtool.c (port,
//   extended port and per-priority statistics; the kernel tree has no
//   Broadcom counter document). Its *_pri<N> byte and packet counts are
//   those of the CoS queue priority N maps to.
// - ice: drivers/net/ethernet/intel/ice/ice_ethtool.c (the PF statistics;
//   intel/ice.rst describes DCB and PFC but lists no counter names). Only
//   XOFF frames pause a priority; XON frames resume it and are not counted.
const std::vector<EthtoolMapping>& builtin_mappings() {
  static const std::vector<EthtoolMapping> table = {
      // driver, stat, metric, direction, reason, scale
      {"mlx5_core", "rx_prio([0-7])_pause", "pfc_pause_frames", "rx", "", 1},
      {"mlx5_core", "tx_prio([0-7])_pause", "pfc_pause_frames", "tx", "", 1},
      {"mlx5_core", "rx_prio([0-7])_pause_duration", "pfc_pause_duration_seconds", "rx", "",
       kMicroseconds},
      {"mlx5_core", "tx_prio([0-7])_pause_duration", "pfc_pause_duration_seconds", "tx", "",
       kMicroseconds},
      {"mlx5_core", "rx_prio([0-7])_bytes", "priority_bytes", "rx", "", 1},
      {"mlx5_core", "tx_prio([0-7])_bytes", "priority_bytes", "tx", "", 1},
      {"mlx5_core", "rx_prio([0-7])_packets", "priority_packets", "rx", "", 1},
      {"mlx5_core", "tx_prio([0-7])_packets", "priority_packets", "tx", "", 1},
      {"mlx5_core", "rx_prio([0-7])_discards", "priority_discards", "", "no_buffer", 1},
      {"mlx5_core", "rx_prio([0-7])_buf_discard", "priority_discards", "", "host_buffer", 1},
      {"mlx5_core", "rx_prio([0-7])_cong_discard", "priority_discards", "", "host_congestion", 1},
      {"mlx5_core", "rx_prio([0-7])_marked", "ecn_marked_packets", "", "", 1},
      {"mlx5_core", "rx_out_of_buffer", "discards", "", "rx_out_of_buffer", 1},
      {"mlx5_core", "rx_discards_phy", "discards", "", "rx_port", 1},
      {"mlx5_core", "tx_discards_phy", "discards", "", "tx_port", 1},

      {"bnxt_en", "rx_pfc_ena_frames_pri([0-7])", "pfc_pause_frames", "rx", "", 1},
      {"bnxt_en", "tx_pfc_ena_frames_pri([0-7])", "pfc_pause_frames", "tx", "", 1},
      {"bnxt_en", "pfc_pri([0-7])_rx_duration_us", "pfc_pause_duration_seconds", "rx", "",
       kMicroseconds},
      {"bnxt_en", "pfc_pri([0-7])_tx_duration_us", "pfc_pause_duration_seconds", "tx", "",
       kMicroseconds},
      {"bnxt_en", "rx_bytes_pri([0-7])", "priority_bytes", "rx", "", 1},
      {"bnxt_en", "tx_bytes_pri([0-7])", "priority_bytes", "tx", "", 1},
      {"bnxt_en", "rx_packets_pri([0-7])", "priority_packets", "rx", "", 1},
      {"bnxt_en", "tx_packets_pri([0-7])", "priority_packets", "tx", "", 1},
      {"bnxt_en", "rx_stat_discard", "discards", "", "rx_port", 1},
      {"bnxt_en", "tx_stat_discard", "discards", "", "tx_port", 1},

      {"ice", "rx_priority_([0-7])_xoff\\.nic", "pfc_pause_frames", "rx", "", 1},
      {"ice", "tx_priority_([0-7])_xoff\\.nic", "pfc_pause_frames", "tx", "", 1},
      {"ice", "rx_dropped\\.nic", "discards", "", "rx_port", 1},
      {"ice", "tx_dropped_link_down\\.nic", "discards", "", "tx_link_down", 1},
  };
  return table;
}

std::string mapping_problem(const EthtoolMapping& m) {
  const Family* f = family_by_id(m.metric);
  if (f == nullptr) {
    std::string ids;
    for (const auto& fam : families()) ids += (ids.empty() ? "" : ", ") + std::string(fam.id);
    return "unknown metric \"" + m.metric + "\" (expected one of: " + ids + ")";
  }
  if (auto driver = Pattern::compile(m.driver); !driver) {
    return "invalid regular expression: " + driver.error().message;
  }
  auto stat = Pattern::compile(m.stat);
  if (!stat) return "invalid regular expression: " + stat.error().message;
  if (m.stat.empty()) return "stat must name a statistic pattern";
  if (f->priority == Family::Priority::required && stat->capture_groups() < 1) {
    return "the stat pattern needs a capture group for the priority, e.g. rx_prio([0-7])_pause";
  }
  if (f->direction && m.direction != "rx" && m.direction != "tx") {
    return std::string("metric ") + f->id + " needs direction rx or tx";
  }
  if (!f->direction && !m.direction.empty()) {
    return std::string("metric ") + f->id + " has no direction";
  }
  if (f->reason && !is_label_value(m.reason)) {
    return std::string("metric ") + f->id + " needs a reason of [a-z0-9_]";
  }
  if (!f->reason && !m.reason.empty()) return std::string("metric ") + f->id + " has no reason";
  if (!(m.scale > 0)) return "scale must be positive";
  return {};
}

StatMapper::StatMapper(const std::vector<EthtoolMapping>& configured) {
  auto add = [&](const EthtoolMapping& m) {
    if (!mapping_problem(m).empty()) return;  // checked with the configuration
    rules_.push_back(Compiled{family_by_id(m.metric), Pattern::checked(m.driver),
                              Pattern::checked(m.stat), m.direction, m.reason, m.scale});
  };
  for (const auto& m : configured) add(m);
  for (const auto& m : builtin_mappings()) add(m);
}

std::vector<Target> StatMapper::resolve(const std::string& driver,
                                        const std::vector<std::string>& names) const {
  std::vector<const Compiled*> rules;
  for (const auto& r : rules_) {
    if (r.driver.matches(driver)) rules.push_back(&r);
  }
  std::vector<Target> out(names.size());
  if (rules.empty()) return out;
  std::string group;
  for (std::size_t i = 0; i < names.size(); ++i) {
    for (const Compiled* r : rules) {
      if (!r->stat.matches(names[i], group)) continue;
      Target t{r->family, "", r->direction, r->reason, r->scale};
      const auto priority = r->family->priority;
      if (priority != Family::Priority::none && is_priority(group)) t.priority = group;
      if (priority == Family::Priority::required && t.priority.empty()) break;  // unmapped
      out[i] = std::move(t);
      break;
    }
  }
  return out;
}

}  // namespace rdma_exporter::ethtool
