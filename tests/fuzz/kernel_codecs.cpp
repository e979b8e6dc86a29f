// Fuzz harness: the DCB codec (an rtnetlink reply) and the ethtool codec (the
// buffer SIOCETHTOOL fills in). The first byte chooses: even, the rest is a
// DCB reply (fuzz_input.hpp); odd, the rest is an ethtool answer, given to
// each of the ethtool parsers.

#include <cstddef>
#include <cstdint>

#include "collectors/kernel/ethtool/codec.hpp"
#include "collectors/kernel/rtnetlink/dcb_codec.hpp"
#include "tests/fuzz/fuzz_input.hpp"

using namespace rdma_exporter;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const auto bytes = fuzz::bytes_of(data, size);
  if (bytes.empty()) return 0;
  const auto rest = bytes.subspan(1);
  if ((bytes[0] & 1) == 0) {
    (void)dcb::decode_ieee(fuzz::reply_from(rest));
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
