// Fuzz harness: the DCB codec (an rtnetlink reply), the ethtool codec (the
// buffer SIOCETHTOOL fills in) and the ethtool netlink codec (a generic
// netlink reply). The first byte chooses, modulo 3: 0, the rest is a DCB
// reply (fuzz_input.hpp); 1, an ethtool answer, given to each of the
// ethtool parsers; 2, a generic netlink reply, given to each ethtool
// netlink decoder (the family id the fake kernel hands out).

#include <cstddef>
#include <cstdint>

#include "common/kernel/netdev/codec.hpp"
#include "common/kernel/netdev/netlink_codec.hpp"
#include "common/kernel/rtnetlink/dcb_codec.hpp"
#include "tests/fuzz/fuzz_input.hpp"

using namespace rdma_exporter;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const auto bytes = fuzz::bytes_of(data, size);
  if (bytes.empty()) return 0;
  const auto rest = bytes.subspan(1);
  if (bytes[0] % 3 == 0) {
    (void)dcb::decode_ieee(fuzz::reply_from(rest));
    return 0;
  }
  if (bytes[0] % 3 == 2) {
    constexpr uint16_t kFamily = 29;  // FakeEthnl::kFamily
    const auto reply = fuzz::reply_from(rest);
    (void)ethnl::decode_family(reply);
    (void)ethnl::decode_linkstate(reply, kFamily);
    (void)ethnl::decode_fec(reply, kFamily);
    (void)ethnl::decode_module_eeprom(reply, kFamily, ethnl::EepromRead{});
    return 0;
  }
  // A copy of exactly the answer's size, as the reader hands it over.
  const ethtool::Bytes answer(rest.begin(), rest.end());
  (void)ethtool::parse_drvinfo(answer);
  (void)ethtool::parse_stats_count(answer);
  (void)ethtool::parse_stat_names(answer);
  (void)ethtool::parse_stat_values(answer);
  return 0;
}
