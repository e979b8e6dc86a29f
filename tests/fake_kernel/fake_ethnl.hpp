#pragma once

// A fake ethtool netlink behind the Transport interface: CTRL_CMD_GETFAMILY
// for "ethtool", ETHTOOL_MSG_LINKSTATE_GET, ETHTOOL_MSG_FEC_GET and
// ETHTOOL_MSG_MODULE_EEPROM_GET (with net/ethtool/eeprom.c's checks) answered
// as the kernel's genetlink controller and net/ethtool/ do, in the real wire
// format, from a model of netdevs.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/kernel/netdev/module_eeprom.hpp"
#include "common/kernel/netlink/transport.hpp"
#include "tests/fake_kernel/nl_message.hpp"

namespace rdma_exporter::testing {

struct FakeEthnlNetdev {
  // LINKSTATE: every attribute that is set is sent.
  std::optional<uint8_t> link = 1;
  std::optional<uint8_t> ext_state, ext_substate;
  std::optional<uint32_t> down_events;
  // FEC: without get_fecparam the kernel answers EOPNOTSUPP.
  bool fec = false;
  std::optional<uint32_t> active;  // ETHTOOL_LINK_MODE_FEC_*_BIT
  // Statistics as fec_stats_recalc() leaves them: total first, then lanes;
  // an empty vector is a statistic the driver does not count (a zero-length
  // attribute, as the kernel sends it).
  std::vector<uint64_t> corrected, uncorrectable, corrected_bits;
  bool fec_stats = true;  // false: a driver without get_fec_stats, no ETHTOOL_A_FEC_STATS
  // MODULE_EEPROM_GET: the module's halves; a half it lacks answers
  // `module_error`, and so does every read when there are none (EOPNOTSUPP:
  // a driver that reads no module).
  std::map<module_eeprom::HalfKey, std::vector<uint8_t>> module;
  int module_error = EOPNOTSUPP;
};

class FakeEthnl final : public netlink::Transport {
 public:
  static constexpr uint16_t kFamily = 29;  // the id the controller hands out
  bool family_present = true;              // false: a kernel before 5.6 (ENOENT)
  std::map<std::string, FakeEthnlNetdev> netdevs;
  // "LINKSTATE <ifname>", "FEC <ifname>", "FAMILY",
  // "MODULE <ifname> <address> <bank> <page> <offset> <length>"
  std::vector<std::string> asked;

  Result<netlink::Reply> exchange(std::span<const uint8_t> request) override;

 private:
  Result<netlink::Reply> module_eeprom(const nlmsghdr* nlh, const std::string& ifname,
                                       std::span<const uint8_t> request);
};

}  // namespace rdma_exporter::testing
