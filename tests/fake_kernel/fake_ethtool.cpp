#include "tests/fake_kernel/fake_ethtool.hpp"

#include <linux/ethtool.h>

#include <cstring>
#include <optional>

namespace rdma_exporter::testing {
namespace {

template <typename T>
Bytes with_header(const T& header, std::size_t extra) {
  Bytes out(sizeof(T) + extra, 0);
  std::memcpy(out.data(), &header, sizeof(T));
  return out;
}

// Copies an answer into the caller's buffer, as copy_to_user would.
Status copy_back(const Bytes& answer, std::span<uint8_t> command) {
  if (answer.size() > command.size()) {
    return Error{EFAULT, "fake ethtool: answer of " + std::to_string(answer.size()) +
                             " bytes overruns a buffer of " + std::to_string(command.size())};
  }
  std::memcpy(command.data(), answer.data(), answer.size());
  return ok_status();
}

}  // namespace

Bytes drvinfo_answer(const std::string& driver, uint32_t n_stats) {
  ethtool_drvinfo d{};
  d.cmd = ETHTOOL_GDRVINFO;
  std::strncpy(d.driver, driver.c_str(), sizeof d.driver - 1);
  // The other fields as a real driver fills them, each with a value of its
  // own: a parser that reads the driver's name from a neighbour gets another.
  std::strncpy(d.version, "6.1.0-18-amd64", sizeof d.version - 1);
  std::strncpy(d.fw_version, "16.35.2000 (MT_0000000012)", sizeof d.fw_version - 1);
  std::strncpy(d.bus_info, "0000:3b:00.0", sizeof d.bus_info - 1);
  std::strncpy(d.erom_version, "3.6.0902", sizeof d.erom_version - 1);
  d.n_priv_flags = 13;
  d.n_stats = n_stats;
  d.testinfo_len = 7;
  d.eedump_len = 0x8000;
  d.regdump_len = 0x5a0;
  return with_header(d, 0);
}

Bytes stats_count_answer(std::optional<uint32_t> count) {
  ethtool_sset_info s{};
  s.cmd = ETHTOOL_GSSET_INFO;
  s.sset_mask = count ? 1ULL << ETH_SS_STATS : 0;
  Bytes out = with_header(s, sizeof(uint32_t));
  if (count) std::memcpy(out.data() + sizeof(ethtool_sset_info), &*count, sizeof(uint32_t));
  return out;
}

Bytes stat_names_answer(const std::vector<std::string>& names, std::size_t room) {
  ethtool_gstrings g{};
  g.cmd = ETHTOOL_GSTRINGS;
  g.string_set = ETH_SS_STATS;
  g.len = static_cast<uint32_t>(names.size());
  Bytes out = with_header(g, std::max(room, names.size()) * ETH_GSTRING_LEN);
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::memcpy(out.data() + sizeof g + i * ETH_GSTRING_LEN, names[i].data(),
                std::min<std::size_t>(names[i].size(), ETH_GSTRING_LEN));
  }
  return out;
}

Bytes stat_values_answer(const std::vector<uint64_t>& values, std::size_t room) {
  ethtool_stats s{};
  s.cmd = ETHTOOL_GSTATS;
  s.n_stats = static_cast<uint32_t>(values.size());
  Bytes out = with_header(s, std::max(room, values.size()) * sizeof(uint64_t));
  if (!values.empty()) {
    std::memcpy(out.data() + sizeof s, values.data(), values.size() * sizeof(uint64_t));
  }
  return out;
}

Status FakeEthtool::call(const std::string& ifname, std::span<uint8_t> command) {
  uint32_t cmd = 0;
  if (command.size() < sizeof cmd) return Error{EFAULT, "fake ethtool: no command"};
  std::memcpy(&cmd, command.data(), sizeof cmd);
  calls.emplace_back(ifname, cmd);
  auto it = netdevs.find(ifname);
  if (it == netdevs.end()) return Error::system(ENODEV, "SIOCETHTOOL on " + ifname);
  FakeNetdev& n = it->second;
  if (n.error != 0) return Error::system(n.error, "SIOCETHTOOL on " + ifname);
  const auto count = static_cast<uint32_t>(n.stats.size());
  switch (cmd) {
    case ETHTOOL_GDRVINFO:
      return copy_back(drvinfo_answer(n.driver, n.has_stats ? count : 0), command);
    case ETHTOOL_GSSET_INFO: {
      Status s =
          copy_back(stats_count_answer(n.has_stats ? std::optional(count) : std::nullopt), command);
      for (; n.grow_after_count > 0; --n.grow_after_count) {
        n.stats.emplace_back("rx" + std::to_string(n.stats.size()) + "_packets", 0);
      }
      return s;
    }
    case ETHTOOL_GSTRINGS: {
      if (!n.has_stats) return Error::system(EOPNOTSUPP, "SIOCETHTOOL on " + ifname);
      std::vector<std::string> names;
      for (const auto& [name, value] : n.stats) names.push_back(name);
      return copy_back(stat_names_answer(names, 0), command);
    }
    case ETHTOOL_GSTATS: {
      if (!n.has_stats) return Error::system(EOPNOTSUPP, "SIOCETHTOOL on " + ifname);
      std::vector<uint64_t> values;
      for (const auto& [name, value] : n.stats) values.push_back(value);
      return copy_back(stat_values_answer(values, 0), command);
    }
    case ETHTOOL_GMODULEINFO: {
      if (n.module_type == 0) return Error::system(EOPNOTSUPP, "SIOCETHTOOL on " + ifname);
      ethtool_modinfo info{};
      info.cmd = cmd;
      info.type = n.module_type;
      info.eeprom_len = static_cast<uint32_t>(n.module_eeprom.size());
      const auto* p = reinterpret_cast<const uint8_t*>(&info);
      return copy_back(Bytes(p, p + sizeof info), command);
    }
    case ETHTOOL_GMODULEEEPROM: {
      if (n.module_type == 0) return Error::system(EOPNOTSUPP, "SIOCETHTOOL on " + ifname);
      ethtool_eeprom e{};
      if (command.size() < sizeof e) return Error{EFAULT, "fake ethtool: short ethtool_eeprom"};
      std::memcpy(&e, command.data(), sizeof e);
      // net/ethtool/ioctl.c: the range must lie within eeprom_len.
      if (e.offset + e.len < e.offset || e.offset + e.len > n.module_eeprom.size()) {
        return Error::system(EINVAL, "SIOCETHTOOL on " + ifname);
      }
      Bytes answer(sizeof e + e.len);
      std::memcpy(answer.data(), &e, sizeof e);
      std::memcpy(answer.data() + sizeof e, n.module_eeprom.data() + e.offset, e.len);
      return copy_back(answer, command);
    }
    default:
      return Error::system(EOPNOTSUPP, "SIOCETHTOOL on " + ifname);
  }
}

FakeNetdev veth_netdev() {
  return FakeNetdev{.driver = "veth",
                    .stats = {{"peer_ifindex", 5},
                              {"rx_queue_0_xdp_packets", 0},
                              {"rx_queue_0_xdp_bytes", 0},
                              {"rx_queue_0_drops", 0},
                              {"rx_queue_0_xdp_redirect", 0},
                              {"rx_queue_0_xdp_drops", 0},
                              {"rx_queue_0_xdp_tx", 0},
                              {"rx_queue_0_xdp_tx_errors", 0},
                              {"tx_queue_0_xdp_xmit", 0},
                              {"tx_queue_0_xdp_xmit_errors", 0}}};
}

}  // namespace rdma_exporter::testing
