// Fuzz harness: transceiver module memory maps. The first byte chooses the
// form. Even: records of a key byte (0x80: address A2h, 0x40: upper half,
// the low 6 bits: the page) and 128 bytes, decoded as ethtool netlink's
// halves would be (and the lower half's halves_to_read). Odd: the legacy
// ioctl's module type (a byte) and a flat image of any length.

#include "common/kernel/netdev/module_eeprom.hpp"

#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_input.hpp"

using namespace rdma_exporter;
using namespace rdma_exporter::module_eeprom;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  auto bytes = fuzz::bytes_of(data, size);
  if (bytes.empty()) return 0;
  auto rest = bytes.subspan(1);
  if (bytes[0] % 2 == 1) {
    if (rest.empty()) return 0;
    auto image = image_from_flat(rest[0], rest.subspan(1));
    if (image) (void)decode(*image);
    return 0;
  }
  Image image;
  while (rest.size() >= 1 + kHalfSize) {
    const uint8_t k = rest[0];
    const HalfKey key{(k & 0x80U) != 0 ? kAddressA2 : kAddressA0, 0,
                      static_cast<uint8_t>(k & 0x3FU), (k & 0x40U) != 0};
    (void)image.put(key, rest.subspan(1, kHalfSize));
    rest = rest.subspan(1 + kHalfSize);
  }
  if (const Half* lower = image.find(kLowerPage)) (void)halves_to_read(*lower);
  (void)decode(image);
  return 0;
}
