#pragma once

// Decoders of a pluggable transceiver module's memory map: SFF-8472 (SFP,
// SFP+, SFP28), SFF-8636 (QSFP+, QSFP28) and CMIS 4 and 5 (QSFP-DD, OSFP,
// QSFP with CMIS), as far as monitoring needs them: identity, temperature
// and supply voltage, per lane receive power, transmit power and bias, the
// module's own alarm and warning thresholds, and its flags. Plain structs, no
// I/O: the halves come from ethtool netlink (MODULE_EEPROM_GET) or from the
// legacy ioctl's flat image.

#include <array>
#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace rdma_exporter::module_eeprom {

inline constexpr std::size_t kHalfSize = 128;
using Half = std::array<uint8_t, kHalfSize>;

// The module's two-wire addresses: 0x50 for everything, and 0x51 for the
// diagnostics of an SFF-8472 module.
inline constexpr uint8_t kAddressA0 = 0x50;
inline constexpr uint8_t kAddressA2 = 0x51;

// Where 128 bytes of the module's memory live: the two-wire address, bank,
// page, and whether they are bytes 128-255 (upper) or 0-127 (lower) of the
// 256-byte window. A lower half is the same whatever page is selected, so it
// is kept as page 0 bank 0.
struct HalfKey {
  uint8_t address = kAddressA0;
  uint8_t bank = 0;
  uint8_t page = 0;
  bool upper = false;
  auto operator<=>(const HalfKey&) const = default;
};

// "A0h lower", "page 03h upper", "bank 0 page 11h upper": for messages.
std::string describe(const HalfKey& key);

// The halves read from one module.
class Image {
 public:
  // `bytes` must be 128 long; anything else is refused.
  Status put(const HalfKey& key, std::span<const uint8_t> bytes);
  const Half* find(const HalfKey& key) const;
  const std::map<HalfKey, Half>& halves() const { return halves_; }

 private:
  std::map<HalfKey, Half> halves_;
};

// The lower half at 0x50: where every module keeps its identifier.
inline constexpr HalfKey kLowerPage{};

// Which halves to read once the lower half at 0x50 is known, in order: the
// identity page, and the pages with thresholds, lane monitors and flags the
// module says it has (none for a flat-memory module, which has page 00h
// only). Nothing for an identifier this decoder does not know.
std::vector<HalfKey> halves_to_read(const Half& lower);

// The module's own limits for one monitored quantity, in the quantity's unit.
struct Thresholds {
  std::optional<double> high_alarm, low_alarm, high_warning, low_warning;
};

// One optical lane's monitors: watts and amperes. Unset: the module does not
// monitor it.
struct Lane {
  std::optional<double> rx_power_watts, tx_power_watts, tx_bias_amperes;
};

// A flag the module raised: "temperature_high_alarm", "rx_power_low_warning",
// "rx_los", "tx_fault", ...; on lane `lane` (from 0), or on the whole
// module (no lane).
struct Flag {
  std::string name;
  std::optional<int> lane;
  auto operator<=>(const Flag&) const = default;
};

struct Module {
  uint8_t identifier = 0;  // SFF-8024
  std::string type;        // "sfp", "qsfp28", "qsfp-dd", "osfp", ...; "0x.." when unknown
  std::string standard;    // "sff-8472", "sff-8636", "cmis"; empty when unknown
  std::string vendor, part_number, serial_number, revision;
  // Whether the module has digital diagnostics (monitors) that were read.
  bool diagnostics = false;
  std::optional<double> temperature_celsius, supply_voltage_volts;
  std::vector<Lane> lanes;
  Thresholds temperature_thresholds, supply_voltage_thresholds, rx_power_thresholds,
      tx_power_thresholds, tx_bias_thresholds;
  // The flags that are set, in memory-map order. SFF-8636 and CMIS latch
  // them until read; SFF-8472 shows them as they are.
  std::vector<Flag> flags;
  // What was expected but not there (a page the module did not give, an
  // image cut short): the values it would have held are left unset.
  std::vector<std::string> missing;
};

// Decodes what `image` holds. Fails only without the lower half at 0x50.
Result<Module> decode(const Image& image);

// The legacy ioctl's answer: ETHTOOL_GMODULEINFO's type (ETH_MODULE_SFF_*)
// and ETHTOOL_GMODULEEEPROM's flat image, split into halves. A flat image is
// A0h then A2h for SFF-8472, and the lower half then the upper halves of
// pages 00h to 03h for SFF-8636. Fails for another type; an image shorter
// than its type says gives the whole halves it holds.
Result<Image> image_from_flat(uint32_t type, std::span<const uint8_t> flat);

// The label text of a fixed-width ASCII field: printable characters kept,
// others as '?', trailing spaces and padding (NUL, 0xFF) dropped.
std::string field_text(std::span<const uint8_t> bytes);

}  // namespace rdma_exporter::module_eeprom
