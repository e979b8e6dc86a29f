#include "tests/fake_kernel/live_host.hpp"

#include <linux/ethtool.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/fake_kernel/driver_counters.hpp"
#include "tests/fake_kernel/fake_dcb.hpp"
#include "tests/fake_kernel/fake_ethnl.hpp"
#include "tests/fake_kernel/fake_ethtool.hpp"
#include "tests/fake_kernel/fake_module.hpp"
#include "tests/fake_kernel/fake_nldev.hpp"

namespace rdma_exporter::testing {
namespace {

constexpr uint8_t kGsi = 1;
constexpr uint8_t kRc = 2;
constexpr uint8_t kUd = 4;
constexpr uint8_t kInit = 1;
constexpr uint8_t kRts = 3;
constexpr uint8_t kErr = 6;

bool is_ib_only_excluded(const std::string& name) {
  return name.starts_with("np_") || name.starts_with("rp_") || name.starts_with("roce_") ||
         name == "rx_icrc_encapsulated";
}

std::vector<std::pair<std::string, uint64_t>> zeroed(const std::vector<std::string>& names,
                                                     bool infiniband = false) {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const auto& n : names) {
    if (infiniband && is_ib_only_excluded(n)) continue;
    out.emplace_back(n, 0);
  }
  return out;
}

// An mlx5 device whose ports count what mlx5 counts (RoCE-only counters
// left out on InfiniBand).
FakeDevice mlx5_device(uint32_t index, const std::string& protocol, const std::string& fw,
                       uint32_t ports = 2) {
  const uint64_t guid = 0x98039b0300340000ULL + index - 1;
  FakeDevice d{.index = index,
               .name = "mlx5_" + std::to_string(index - 1),
               .fw_version = fw,
               .node_guid = guid,
               .sys_image_guid = guid,
               .protocol = protocol};
  d.qp_counter_names = mlx5_qp_counters();
  for (uint32_t p = 1; p <= ports; ++p) {
    FakePort port{.index = p, .counters = zeroed(mlx5_port_counters(), protocol == "ib")};
    if (protocol == "ib") {
      port.lid = 2 + p;
      port.sm_lid = 1;
      port.lmc = 0;
    } else {
      port.netdev = "ens1f" + std::to_string(p - 1);
      port.netdev_index = 3 + p;
    }
    d.ports.push_back(port);
  }
  return d;
}

FakeNldev make_kernel() {
  FakeNldev k;
  FakeDevice roce = mlx5_device(1, "roce", "16.35.2000");
  for (auto& p : roce.ports) {
    p.counter_mode = RDMA_COUNTER_MODE_AUTO;
    p.auto_mask = RDMA_COUNTER_MASK_QP_TYPE | RDMA_COUNTER_MASK_PID;
  }
  roce.resources = {{"pd", 6}, {"cq", 14}, {"qp", 0}, {"cm_id", 3}, {"mr", 40}, {"ctx", 5}};

  FakeDevice ib = mlx5_device(2, "ib", "20.39.1002");
  // A port that lost its link: DOWN, physically DISABLED.
  ib.ports[1].state = 1;
  ib.ports[1].phys_state = 3;
  ib.resources = {{"pd", 2}, {"cq", 4}, {"qp", 0}, {"mr", 8}, {"ctx", 1}};

  FakeDevice rxe{
      .index = 3, .name = "rxe0", .node_guid = 0x505400fffe120000ULL, .protocol = "roce"};
  rxe.ports.push_back(FakePort{
      .index = 1, .netdev = "veth0", .netdev_index = 7, .counters = zeroed(rxe_port_counters())});
  rxe.qp_counters_supported = false;
  rxe.qp_counter_names.clear();
  rxe.resources = {{"pd", 1}, {"cq", 2}, {"qp", 0}, {"mr", 2}, {"ctx", 1}};

  k.devices = {roce, ib, rxe};

  // Processes (their comm and cgroup come from the proc directory).
  for (int i = 0; i < 3; ++i) k.create_qp(1, 1, kRc, 100);
  for (int i = 0; i < 2; ++i) k.create_qp(1, 1, kRc, 101);
  k.create_qp(1, 1, kUd, 200);
  k.create_qp(1, 2, kRc, 200);
  k.create_qp(1, 2, kRc, 300);
  k.create_qp(1, 1, kGsi, std::nullopt, "ib_core");
  k.create_qp(2, 1, kRc, 200);
  k.create_qp(2, 1, kGsi, std::nullopt, "ib_core");
  k.create_qp(3, 1, kRc, 300);
  // Not every QP is in RTS.
  k.device(1)->qps[5].state = kInit;
  k.device(1)->qps[6].state = kErr;
  for (auto& d : k.devices) {
    for (auto& [name, value] : d.resources) {
      if (name == "qp") value = d.qps.size();
    }
  }
  return k;
}

// The netdev of a rail host's RNIC i.
std::string rail_netdev(uint32_t i) {
  return "ens" + std::to_string(i + 1) + "np0";
}

// A rail host: `rnics` single-port mlx5 RoCE devices, one per rail, in auto
// mode by QP type and process, a GSI QP on each, and `processes` processes
// (pids 1000 on) with an RC QP on every port: processes * rnics counter sets.
FakeNldev make_rail_kernel(uint32_t rnics, uint32_t processes) {
  FakeNldev k;
  for (uint32_t i = 0; i < rnics; ++i) {
    FakeDevice d = mlx5_device(i + 1, "roce", "28.39.1002", 1);
    d.ports[0].netdev = rail_netdev(i);
    d.ports[0].netdev_index = 10 + i;
    d.ports[0].counter_mode = RDMA_COUNTER_MODE_AUTO;
    d.ports[0].auto_mask = RDMA_COUNTER_MASK_QP_TYPE | RDMA_COUNTER_MASK_PID;
    d.resources = {{"pd", 2 + i},    {"cq", 4 + i},  {"qp", 0},
                   {"cm_id", 1 + i}, {"mr", 16 + i}, {"ctx", 1 + i}};
    k.devices.push_back(d);
  }
  for (uint32_t i = 0; i < rnics; ++i) {
    k.create_qp(i + 1, 1, kGsi, std::nullopt, "ib_core");
    for (uint32_t p = 0; p < processes; ++p) k.create_qp(i + 1, 1, kRc, 1000 + p);
  }
  for (auto& d : k.devices) {
    for (auto& [name, value] : d.resources) {
      if (name == "qp") value = d.qps.size();
    }
  }
  return k;
}

// Per tick, what a counter of this name grows by: errors a little, traffic
// a lot, so that rates differ the way they do on a busy port.
uint64_t step(const std::string& name, uint64_t tick) {
  if (name == "link_downed") return tick % 20 == 0 ? 1 : 0;
  if (name.find("rx_") == 0 || name.find("pkts") != std::string::npos ||
      name.starts_with("rdma_")) {
    return 5000 + 37 * (tick % 11);
  }
  if (name.find("cnp") != std::string::npos || name.find("ecn") != std::string::npos) {
    return 300 + 7 * (tick % 5);
  }
  return tick % 3;
}

// The fake kernel, with time passing: every device dump (the start of a
// collection) moves traffic through the QPs and the ports.
class LiveKernel final : public netlink::Transport {
 public:
  explicit LiveKernel(FakeNldev kernel) : k_(std::move(kernel)) {}

  Result<netlink::Reply> exchange(std::span<const uint8_t> request) override {
    const auto* nlh = reinterpret_cast<const nlmsghdr*>(request.data());
    if (request.size() >= sizeof(nlmsghdr) &&
        RDMA_NL_GET_OP(nlh->nlmsg_type) == RDMA_NLDEV_CMD_GET &&
        (nlh->nlmsg_flags & NLM_F_DUMP) != 0) {
      tick();
    }
    return k_.exchange(request);
  }

 private:
  void tick() {
    ++ticks_;
    for (auto& d : k_.devices) {
      // QP traffic goes to the QP's counter set and to the port's total.
      const std::vector<FakeQp> qps = d.qps;
      for (const auto& q : qps) {
        if (!q.pid || q.state != kRts) continue;
        for (const auto& name : d.qp_counter_names) {
          k_.traffic(d.index, q.lqpn, name, step(name, ticks_ + q.lqpn));
        }
      }
      // What no QP accounts for: congestion, link events, driver-wide counters.
      for (auto& p : d.ports) {
        if (p.state != 4) continue;
        for (auto& [name, value] : p.counters) {
          const bool per_qp = std::find(d.qp_counter_names.begin(), d.qp_counter_names.end(),
                                        name) != d.qp_counter_names.end();
          if (!per_qp || !d.qp_counters_supported) value += step(name, ticks_ + p.index);
        }
      }
    }
  }

  FakeNldev k_;
  uint64_t ticks_ = 0;
};

// mlx5's per-priority port statistics (ethtool -S) for `priorities`, RoCE on
// priority 3 with PFC: traffic on 0 and 3, pauses received and sent on 3.
FakeNetdev mlx5_netdev(const std::vector<int>& priorities = {0, 3}) {
  FakeNetdev n;
  n.driver = "mlx5_core";
  for (int prio : priorities) {
    const std::string p = std::to_string(prio);
    for (const char* dir : {"rx", "tx"}) {
      const std::string d = dir;
      n.stats.emplace_back(d + "_prio" + p + "_bytes", 0);
      n.stats.emplace_back(d + "_prio" + p + "_packets", 0);
      n.stats.emplace_back(d + "_prio" + p + "_pause", 0);
      n.stats.emplace_back(d + "_prio" + p + "_pause_duration", 0);
    }
    n.stats.emplace_back("rx_prio" + p + "_discards", 0);
    n.stats.emplace_back("rx_prio" + p + "_marked", 0);
  }
  n.stats.emplace_back("rx_out_of_buffer", 0);
  n.stats.emplace_back("rx_discards_phy", 0);
  n.stats.emplace_back("tx_discards_phy", 0);
  return n;
}

// The fake ethtool, with time passing: every read of a netdev's driver
// information (the start of its collection) moves its statistics.
class LiveEthtool final : public ethtool::Ioctl {
 public:
  explicit LiveEthtool(std::unique_ptr<FakeEthtool> fake) : fake_(std::move(fake)) {}

  Status call(const std::string& ifname, std::span<uint8_t> command) override {
    uint32_t cmd = 0;
    if (command.size() >= sizeof cmd) std::memcpy(&cmd, command.data(), sizeof cmd);
    if (cmd == ETHTOOL_GDRVINFO) {
      if (auto it = fake_->netdevs.find(ifname); it != fake_->netdevs.end()) {
        ++ticks_;
        for (auto& [name, value] : it->second.stats) {
          if (name.ends_with("_pause_duration")) {
            value += 40 + 3 * (ticks_ % 7);  // microseconds
          } else if (name.ends_with("_pause") || name.ends_with("_marked")) {
            value += step("cnp", ticks_);
          } else {
            value += step(name, ticks_);
          }
        }
      }
    }
    return fake_->call(ifname, command);
  }

 private:
  std::unique_ptr<FakeEthtool> fake_;
  uint64_t ticks_ = 0;
};
}  // namespace

// The kernel of the model above: nldev, netdev statistics and DCB from
// fakes, never from this host's netdevs: the RoCE ports' DCB configuration
// and per-priority statistics as mlx5 has them, veth statistics for the
// Soft-RoCE port.
KernelInterfaces mixed_host_kernel() {
  auto dcb = std::make_unique<FakeDcb>();
  dcb->netdevs["ens1f0"] = mlx5_dcb();
  dcb->netdevs["ens1f1"] = mlx5_dcb();
  dcb->netdevs["veth0"] = FakeDcbNetdev{.dcb = false};
  auto ethtool = std::make_unique<FakeEthtool>();
  ethtool->netdevs["veth0"] = veth_netdev();
  ethtool->netdevs["ens1f0"] = mlx5_netdev();
  ethtool->netdevs["ens1f1"] = mlx5_netdev();
  // ethtool netlink: ens1f0 with RS-FEC counted per lane and a link-down
  // count, ens1f1 down for want of a cable, veth0 as a veth answers.
  auto ethnl = std::make_unique<FakeEthnl>();
  FakeEthnlNetdev rs;
  rs.down_events = 2;
  rs.fec = true;
  rs.active = ETHTOOL_LINK_MODE_FEC_RS_BIT;
  rs.corrected = {1212, 600, 612};
  rs.uncorrectable = {3, 1, 2};
  ethnl->netdevs["ens1f0"] = rs;
  FakeEthnlNetdev no_cable;
  no_cable.link = 0;
  no_cable.ext_state = ETHTOOL_LINK_EXT_STATE_NO_CABLE;
  ethnl->netdevs["ens1f1"] = no_cable;
  ethnl->netdevs["veth0"] = FakeEthnlNetdev{};
  KernelInterfaces kernel{std::make_unique<LiveKernel>(make_kernel()), std::move(dcb),
                          std::make_unique<LiveEthtool>(std::move(ethtool))};
  kernel.generic = std::move(ethnl);
  // Modules, read from the transceiver collector's own handles: a QSFP28
  // through ethtool netlink on ens1f0, an SFP28 through the legacy ioctl on
  // ens1f1 (its netlink answers EOPNOTSUPP), none on veth0.
  auto module_ethnl = std::make_unique<FakeEthnl>();
  module_ethnl->netdevs["ens1f0"].module = qsfp28_module();
  module_ethnl->netdevs["ens1f1"] = FakeEthnlNetdev{};
  module_ethnl->netdevs["veth0"] = FakeEthnlNetdev{};
  auto module_ioctl = std::make_unique<FakeEthtool>();
  module_ioctl->netdevs["ens1f1"] =
      FakeNetdev{.driver = "mlx5_core",
                 .module_type = ETH_MODULE_SFF_8472,
                 .module_eeprom = flat_image(sfp_module(), ETH_MODULE_SFF_8472, 512)};
  module_ioctl->netdevs["veth0"] = veth_netdev();
  kernel.module_generic = std::move(module_ethnl);
  kernel.module_ioctl = std::move(module_ioctl);
  return kernel;
}

// The rail host's kernel: every netdev as mlx5 has it on a 400G link, with
// PFC on priority 3, statistics for all 8 priorities, RS-FEC counted on 8
// lanes and a QSFP-DD module read through ethtool netlink.
KernelInterfaces rail_host_kernel(uint32_t rnics, uint32_t processes) {
  auto dcb = std::make_unique<FakeDcb>();
  auto ethtool = std::make_unique<FakeEthtool>();
  auto ethnl = std::make_unique<FakeEthnl>();
  auto module_ethnl = std::make_unique<FakeEthnl>();
  auto module_ioctl = std::make_unique<FakeEthtool>();
  for (uint32_t i = 0; i < rnics; ++i) {
    const std::string netdev = rail_netdev(i);
    dcb->netdevs[netdev] = mlx5_dcb();
    ethtool->netdevs[netdev] = mlx5_netdev({0, 1, 2, 3, 4, 5, 6, 7});
    FakeEthnlNetdev rs;
    rs.down_events = i;
    rs.fec = true;
    rs.active = ETHTOOL_LINK_MODE_FEC_RS_BIT;
    rs.corrected = {800 + 8 * i};
    rs.uncorrectable = {i};
    for (uint32_t lane = 0; lane < 8; ++lane) {
      rs.corrected.push_back(100 + i);
      rs.uncorrectable.push_back(lane == 0 ? i : 0);
    }
    ethnl->netdevs[netdev] = rs;
    module_ethnl->netdevs[netdev].module = qsfp_dd_module();
  }
  KernelInterfaces kernel{std::make_unique<LiveKernel>(make_rail_kernel(rnics, processes)),
                          std::move(dcb), std::make_unique<LiveEthtool>(std::move(ethtool))};
  kernel.generic = std::move(ethnl);
  kernel.module_generic = std::move(module_ethnl);
  kernel.module_ioctl = std::move(module_ioctl);
  return kernel;
}
}  // namespace rdma_exporter::testing
