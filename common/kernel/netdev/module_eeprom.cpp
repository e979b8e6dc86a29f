#include "common/kernel/netdev/module_eeprom.hpp"

#include <linux/ethtool.h>

#include <bit>
#include <cstdio>
#include <cstring>

namespace rdma_exporter::module_eeprom {
namespace {

// The halves the decoders read beyond the lower page, named once for them
// and for halves_to_read: SFF-8472's diagnostics at A2h, and the upper
// pages of SFF-8636 (0 and 3) and CMIS (0, 1, 2 and 11h).
constexpr HalfKey kSff8472Diagnostics{kAddressA2, 0, 0, false};
constexpr HalfKey kUpperPage0{kAddressA0, 0, 0, true};
constexpr HalfKey kUpperPage1{kAddressA0, 0, 1, true};
constexpr HalfKey kUpperPage2{kAddressA0, 0, 2, true};
constexpr HalfKey kUpperPage3{kAddressA0, 0, 3, true};
constexpr HalfKey kUpperPage11{kAddressA0, 0, 0x11, true};

// SFF-8024 identifiers (byte 0).
constexpr uint8_t kGbic = 0x01;
constexpr uint8_t kSoldered = 0x02;
constexpr uint8_t kSfp = 0x03;
constexpr uint8_t kQsfp = 0x0C;
constexpr uint8_t kQsfpPlus = 0x0D;
constexpr uint8_t kQsfp28 = 0x11;
constexpr uint8_t kQsfpDd = 0x18;
constexpr uint8_t kOsfp = 0x19;
constexpr uint8_t kDsfp = 0x1B;
constexpr uint8_t kQsfpCmis = 0x1E;
constexpr uint8_t kSfpDd = 0x1F;
constexpr uint8_t kSfpCmis = 0x20;

enum class Standard { unknown, sff8472, sff8636, cmis };

Standard standard_of(uint8_t identifier) {
  switch (identifier) {
    case kGbic:
    case kSoldered:
    case kSfp:
      return Standard::sff8472;
    case kQsfp:
    case kQsfpPlus:
    case kQsfp28:
      return Standard::sff8636;
    case kQsfpDd:
    case kOsfp:
    case kDsfp:
    case kQsfpCmis:
    case kSfpDd:
    case kSfpCmis:
      return Standard::cmis;
    default:
      return Standard::unknown;
  }
}

std::string type_name(uint8_t identifier) {
  switch (identifier) {
    case kGbic:
      return "gbic";
    case kSoldered:
      return "soldered";
    case kSfp:
      return "sfp";
    case kQsfp:
      return "qsfp";
    case kQsfpPlus:
      return "qsfp+";
    case kQsfp28:
      return "qsfp28";
    case kQsfpDd:
      return "qsfp-dd";
    case kOsfp:
      return "osfp";
    case kDsfp:
      return "dsfp";
    case kQsfpCmis:
      return "qsfp-cmis";
    case kSfpDd:
      return "sfp-dd";
    case kSfpCmis:
      return "sfp-cmis";
    default: {
      std::array<char, 8> text{};
      std::snprintf(text.data(), text.size(), "0x%02x", identifier);
      return text.data();
    }
  }
}

// The units every one of the three standards uses for its monitors:
// 1/256 degree Celsius (signed), 100 uV, 2 uA, 0.1 uW. Values are divided
// (not multiplied by the unit's inexact fraction), so that 8000 x 0.1 uW
// reads 0.0008 W exactly as printed.
constexpr double kUnitsPerCelsius = 256;
constexpr double kUnitsPerVolt = 1e4;
constexpr double kMicroamperesPerUnit = 2;
constexpr double kUnitsPerWatt = 1e7;
constexpr double kMicroamperesPerAmpere = 1e6;

// Bytes 0-255 of one page: the lower half and the upper half, each may be
// missing.
class Window {
 public:
  Window(const Half* lower, const Half* upper) : lower_(lower), upper_(upper) {}
  bool has(std::size_t offset) const { return half(offset) != nullptr; }
  uint8_t byte(std::size_t offset) const { return (*half(offset))[offset % kHalfSize]; }
  uint16_t u16(std::size_t offset) const {
    return static_cast<uint16_t>(byte(offset) << 8U | byte(offset + 1));
  }
  int16_t s16(std::size_t offset) const { return static_cast<int16_t>(u16(offset)); }
  std::span<const uint8_t> bytes(std::size_t offset, std::size_t count) const {
    return {half(offset)->data() + offset % kHalfSize, count};
  }

 private:
  const Half* half(std::size_t offset) const { return offset < kHalfSize ? lower_ : upper_; }
  const Half* lower_;
  const Half* upper_;
};

// Four thresholds stored high alarm, low alarm, high warning, low warning,
// two bytes each, from `offset`.
template <typename Convert>
Thresholds thresholds_at(const Window& w, std::size_t offset, Convert convert) {
  return Thresholds{convert(w, offset), convert(w, offset + 2), convert(w, offset + 4),
                    convert(w, offset + 6)};
}

double celsius(const Window& w, std::size_t o) {
  return w.s16(o) / kUnitsPerCelsius;
}
double volts(const Window& w, std::size_t o) {
  return w.u16(o) / kUnitsPerVolt;
}
double amperes(const Window& w, std::size_t o) {
  return w.u16(o) * kMicroamperesPerUnit / kMicroamperesPerAmpere;
}
double watts(const Window& w, std::size_t o) {
  return w.u16(o) / kUnitsPerWatt;
}

// Four flags in the upper or lower nibble of a byte, high alarm first.
void nibble_flags(uint8_t byte, bool upper_nibble, const char* quantity, std::optional<int> lane,
                  std::vector<Flag>& out) {
  static constexpr std::array<const char*, 4> kLevels = {"high_alarm", "low_alarm", "high_warning",
                                                         "low_warning"};
  const unsigned nibble = upper_nibble ? byte >> 4U : byte & 0x0FU;
  for (unsigned i = 0; i < 4; ++i) {
    if ((nibble & (0x8U >> i)) != 0) {
      out.push_back(Flag{std::string(quantity) + "_" + kLevels[i], lane});
    }
  }
}

// One flag per lane, bit i for lane i, of `lanes` lanes.
void lane_flags(uint8_t byte, const char* name, std::size_t lanes, std::vector<Flag>& out) {
  for (std::size_t lane = 0; lane < lanes; ++lane) {
    if ((byte & (1U << lane)) != 0) out.push_back(Flag{name, static_cast<int>(lane)});
  }
}

void identity(Module& m, const Window& w, std::size_t vendor, std::size_t part,
              std::size_t revision, std::size_t revision_len, std::size_t serial) {
  m.vendor = field_text(w.bytes(vendor, 16));
  m.part_number = field_text(w.bytes(part, 16));
  m.revision = field_text(w.bytes(revision, revision_len));
  m.serial_number = field_text(w.bytes(serial, 16));
}

// SFF-8472 rev 12.4: identity at A0h 20-91, diagnostics at A2h 0-119.
// External calibration constants, at A2h 56-91.
struct Calibration {
  std::array<float, 5> rx_power{};  // Rx_PWR(4) .. Rx_PWR(0)
  double bias_slope = 1, bias_offset = 0, tx_slope = 1, tx_offset = 0;
  double t_slope = 1, t_offset = 0, v_slope = 1, v_offset = 0;
};

Calibration calibration(const Window& a2) {
  Calibration c;
  for (std::size_t i = 0; i < c.rx_power.size(); ++i) {
    const uint32_t bits = static_cast<uint32_t>(a2.u16(56 + 4 * i)) << 16U | a2.u16(58 + 4 * i);
    c.rx_power[i] = std::bit_cast<float>(bits);
  }
  // Slopes are unsigned 8.8 fixed point; offsets signed, in the raw unit.
  c.bias_slope = a2.u16(76) / 256.0;
  c.bias_offset = a2.s16(78);
  c.tx_slope = a2.u16(80) / 256.0;
  c.tx_offset = a2.s16(82);
  c.t_slope = a2.u16(84) / 256.0;
  c.t_offset = a2.s16(86);
  c.v_slope = a2.u16(88) / 256.0;
  c.v_offset = a2.s16(90);
  return c;
}

void decode_sff8472(Module& m, const Image& image) {
  const Window a0(image.find(kLowerPage), nullptr);
  identity(m, a0, 20, 40, 56, 4, 68);
  const uint8_t ddm = a0.byte(92);
  if ((ddm & 0x40U) == 0) return;  // no digital diagnostics
  const Half* a2_lower = image.find(kSff8472Diagnostics);
  if (a2_lower == nullptr) {
    m.missing.push_back(describe(kSff8472Diagnostics));
    return;
  }
  const Window a2(a2_lower, nullptr);
  m.diagnostics = true;
  const bool external = (ddm & 0x10U) != 0;
  const Calibration cal = external ? calibration(a2) : Calibration{};
  // Raw value to unit, through the external calibration where the module
  // asks for it (for monitors and thresholds alike).
  auto temp = [&](const Window& w, std::size_t o) {
    return external ? (cal.t_slope * w.s16(o) + cal.t_offset) / kUnitsPerCelsius : celsius(w, o);
  };
  auto vcc = [&](const Window& w, std::size_t o) {
    return external ? (cal.v_slope * w.u16(o) + cal.v_offset) / kUnitsPerVolt : volts(w, o);
  };
  auto bias = [&](const Window& w, std::size_t o) {
    return external ? (cal.bias_slope * w.u16(o) + cal.bias_offset) * kMicroamperesPerUnit /
                          kMicroamperesPerAmpere
                    : amperes(w, o);
  };
  auto tx = [&](const Window& w, std::size_t o) {
    return external ? (cal.tx_slope * w.u16(o) + cal.tx_offset) / kUnitsPerWatt : watts(w, o);
  };
  auto rx = [&](const Window& w, std::size_t o) {
    if (!external) return watts(w, o);
    const double x = w.u16(o);
    double sum = 0;
    for (float coefficient : cal.rx_power) sum = sum * x + coefficient;  // Horner, Rx_PWR(4) first
    return (sum < 0 ? 0 : sum) / kUnitsPerWatt;
  };
  m.temperature_thresholds = thresholds_at(a2, 0, temp);
  m.supply_voltage_thresholds = thresholds_at(a2, 8, vcc);
  m.tx_bias_thresholds = thresholds_at(a2, 16, bias);
  m.tx_power_thresholds = thresholds_at(a2, 24, tx);
  m.rx_power_thresholds = thresholds_at(a2, 32, rx);
  m.temperature_celsius = temp(a2, 96);
  m.supply_voltage_volts = vcc(a2, 98);
  m.lanes.push_back(Lane{rx(a2, 104), tx(a2, 102), bias(a2, 100)});
  // Status (110) and the alarm (112-113) and warning (116-117) flags.
  const uint8_t status = a2.byte(110);
  if ((status & 0x04U) != 0) m.flags.push_back(Flag{"tx_fault", 0});
  if ((status & 0x02U) != 0) m.flags.push_back(Flag{"rx_los", 0});
  for (const auto& [offset, level] :
       {std::pair<std::size_t, const char*>{112, "alarm"}, {116, "warning"}}) {
    const uint8_t a = a2.byte(offset);
    const uint8_t b = a2.byte(offset + 1);
    const std::string high = std::string("_high_") + level;
    const std::string low = std::string("_low_") + level;
    auto add = [&](bool set, const char* quantity, const std::string& which,
                   std::optional<int> lane) {
      if (set) m.flags.push_back(Flag{quantity + which, lane});
    };
    add((a & 0x80U) != 0, "temperature", high, std::nullopt);
    add((a & 0x40U) != 0, "temperature", low, std::nullopt);
    add((a & 0x20U) != 0, "supply_voltage", high, std::nullopt);
    add((a & 0x10U) != 0, "supply_voltage", low, std::nullopt);
    add((a & 0x08U) != 0, "tx_bias", high, 0);
    add((a & 0x04U) != 0, "tx_bias", low, 0);
    add((a & 0x02U) != 0, "tx_power", high, 0);
    add((a & 0x01U) != 0, "tx_power", low, 0);
    add((b & 0x80U) != 0, "rx_power", high, 0);
    add((b & 0x40U) != 0, "rx_power", low, 0);
  }
}

// SFF-8636 rev 2.10a: monitors and flags in the lower page, identity in page
// 00h, thresholds in page 03h.
constexpr std::size_t kQsfpLanes = 4;

void decode_sff8636(Module& m, const Image& image) {
  const Half* lower = image.find(kLowerPage);
  const Half* page0 = image.find(kUpperPage0);
  const bool flat = ((*lower)[2] & 0x04U) != 0;
  // Temperature, supply voltage, receive power and bias are always there;
  // transmit power when page 00h says so (byte 220 bit 2), and also when
  // page 00h is missing.
  bool tx_mon = true;
  if (page0 != nullptr) {
    const Window w(lower, page0);
    identity(m, w, 148, 168, 184, 2, 196);
    tx_mon = (w.byte(220) & 0x04U) != 0;
  } else {
    m.missing.push_back(describe(kUpperPage0));
  }
  const Window w(lower, nullptr);
  m.diagnostics = true;
  m.temperature_celsius = celsius(w, 22);
  m.supply_voltage_volts = volts(w, 26);
  for (std::size_t lane = 0; lane < kQsfpLanes; ++lane) {
    Lane l;
    l.rx_power_watts = watts(w, 34 + 2 * lane);
    l.tx_bias_amperes = amperes(w, 42 + 2 * lane);
    if (tx_mon) l.tx_power_watts = watts(w, 50 + 2 * lane);
    m.lanes.push_back(l);
  }
  // Latched flags: LOS (3), faults (4), CDR loss of lock (5), module (6-7),
  // then two lanes per byte for receive power (9-10), bias (11-12) and
  // transmit power (13-14).
  lane_flags(w.byte(3) & 0x0FU, "rx_los", kQsfpLanes, m.flags);
  lane_flags(w.byte(3) >> 4U, "tx_los", kQsfpLanes, m.flags);
  lane_flags(w.byte(4) & 0x0FU, "tx_fault", kQsfpLanes, m.flags);
  lane_flags(w.byte(5) & 0x0FU, "rx_cdr_lol", kQsfpLanes, m.flags);
  lane_flags(w.byte(5) >> 4U, "tx_cdr_lol", kQsfpLanes, m.flags);
  nibble_flags(w.byte(6), true, "temperature", std::nullopt, m.flags);
  nibble_flags(w.byte(7), true, "supply_voltage", std::nullopt, m.flags);
  for (const auto& [offset, quantity] :
       {std::pair<std::size_t, const char*>{9, "rx_power"}, {11, "tx_bias"}, {13, "tx_power"}}) {
    if (std::strcmp(quantity, "tx_power") == 0 && !tx_mon) continue;
    for (int lane = 0; lane < static_cast<int>(kQsfpLanes); ++lane) {
      nibble_flags(w.byte(offset + static_cast<std::size_t>(lane) / 2), lane % 2 == 0, quantity,
                   lane, m.flags);
    }
  }
  if (flat) return;  // no page 03h: no thresholds
  const Half* page3 = image.find(kUpperPage3);
  if (page3 == nullptr) {
    m.missing.push_back(describe(kUpperPage3));
    return;
  }
  const Window t(lower, page3);
  m.temperature_thresholds = thresholds_at(t, 128, celsius);
  m.supply_voltage_thresholds = thresholds_at(t, 144, volts);
  m.rx_power_thresholds = thresholds_at(t, 176, watts);
  m.tx_bias_thresholds = thresholds_at(t, 184, amperes);
  if (tx_mon) m.tx_power_thresholds = thresholds_at(t, 192, watts);
}

// CMIS 5.2: module monitors and flags in the lower page, identity in page
// 00h, monitor advertisement in 01h, thresholds in 02h, lane monitors and
// flags in bank 0 page 11h (lanes 1-8).
constexpr std::size_t kCmisBankLanes = 8;

// The module's latched temperature and supply voltage flags, lower page
// byte 9: temperature in bits 0-3 and supply voltage in bits 4-7, the high
// alarm in the lowest bit of each.
constexpr std::array<const char*, 4> kCmisLevels = {"high_alarm", "low_alarm", "high_warning",
                                                    "low_warning"};

void cmis_module_flags(const Window& lo, Module& m) {
  for (unsigned i = 0; i < 4; ++i) {
    if ((lo.byte(9) & (1U << i)) != 0) {
      m.flags.push_back(Flag{std::string("temperature_") + kCmisLevels[i], std::nullopt});
    }
  }
  for (unsigned i = 0; i < 4; ++i) {
    if ((lo.byte(9) & (0x10U << i)) != 0) {
      m.flags.push_back(Flag{std::string("supply_voltage_") + kCmisLevels[i], std::nullopt});
    }
  }
}

// The lane monitors a CMIS module has: page 01h byte 160.
struct CmisLaneMonitors {
  bool bias = false, tx = false, rx = false;
  // Bias is reported in 2 uA times 1, 2 or 4 (bits 4-3; 3 is reserved).
  bool bias_known = false;
  double microamperes_per_unit = kMicroamperesPerUnit;

  explicit CmisLaneMonitors(uint8_t advertised)
      : bias((advertised & 0x01U) != 0),
        tx((advertised & 0x02U) != 0),
        rx((advertised & 0x04U) != 0),
        bias_known(((advertised >> 3U) & 0x03U) != 3),
        microamperes_per_unit(kMicroamperesPerUnit *
                              static_cast<double>(1U << ((advertised >> 3U) & 0x03U))) {}
  bool any() const { return bias || tx || rx; }
  bool bias_readable() const { return bias && bias_known; }
  double bias_amperes(const Window& w, std::size_t o) const {
    return w.u16(o) * microamperes_per_unit / kMicroamperesPerAmpere;
  }
};

// Thresholds in page 02h, for the monitors the module has.
void cmis_thresholds(Module& m, const Half* lower, const Image& image,
                     const CmisLaneMonitors& mon) {
  const Half* page2 = image.find(kUpperPage2);
  if (page2 == nullptr) {
    m.missing.push_back(describe(kUpperPage2));
    return;
  }
  const Window t(lower, page2);
  m.temperature_thresholds = thresholds_at(t, 128, celsius);
  m.supply_voltage_thresholds = thresholds_at(t, 136, volts);
  if (mon.tx) m.tx_power_thresholds = thresholds_at(t, 176, watts);
  if (mon.bias_readable()) {
    m.tx_bias_thresholds = thresholds_at(
        t, 184, [&mon](const Window& w, std::size_t o) { return mon.bias_amperes(w, o); });
  }
  if (mon.rx) m.rx_power_thresholds = thresholds_at(t, 192, watts);
}

// The lanes' monitors and latched flags in bank 0 page 11h, for the lanes
// the module's first application uses on the media side (lower page byte
// 88, bits 3-0; all of bank 0 when it does not say).
void cmis_lanes(Module& m, const Half* lower, const Half* page11, const CmisLaneMonitors& mon) {
  const Window lo(lower, nullptr);
  std::size_t lanes = lo.byte(88) & 0x0FU;
  if (lanes == 0 || lanes > kCmisBankLanes) lanes = kCmisBankLanes;
  const Window w(lower, page11);
  for (std::size_t lane = 0; lane < lanes; ++lane) {
    Lane l;
    if (mon.tx) l.tx_power_watts = watts(w, 154 + 2 * lane);
    if (mon.bias_readable()) l.tx_bias_amperes = mon.bias_amperes(w, 170 + 2 * lane);
    if (mon.rx) l.rx_power_watts = watts(w, 186 + 2 * lane);
    m.lanes.push_back(l);
  }
  // Latched lane flags, one bit per lane, 135-152.
  lane_flags(w.byte(135), "tx_fault", lanes, m.flags);
  lane_flags(w.byte(136), "tx_los", lanes, m.flags);
  lane_flags(w.byte(137), "tx_cdr_lol", lanes, m.flags);
  struct Group {
    std::size_t offset;
    const char* quantity;
    bool monitored;
  };
  for (const Group& g : {Group{139, "tx_power", mon.tx}, Group{143, "tx_bias", mon.bias},
                         Group{149, "rx_power", mon.rx}}) {
    if (!g.monitored) continue;
    for (unsigned i = 0; i < 4; ++i) {
      lane_flags(w.byte(g.offset + i), (std::string(g.quantity) + "_" + kCmisLevels[i]).c_str(),
                 lanes, m.flags);
    }
  }
  lane_flags(w.byte(147), "rx_los", lanes, m.flags);
  lane_flags(w.byte(148), "rx_cdr_lol", lanes, m.flags);
}

void decode_cmis(Module& m, const Image& image) {
  const Half* lower = image.find(kLowerPage);
  const bool flat = ((*lower)[2] & 0x80U) != 0;
  if (const Half* page0 = image.find(kUpperPage0)) {
    identity(m, Window(lower, page0), 129, 148, 164, 2, 166);
  } else {
    m.missing.push_back(describe(kUpperPage0));
  }
  // A flat-memory module (a passive cable) has no monitors.
  if (flat) return;
  const Window lo(lower, nullptr);
  m.diagnostics = true;
  m.temperature_celsius = celsius(lo, 14);
  m.supply_voltage_volts = volts(lo, 16);
  cmis_module_flags(lo, m);
  const Half* page1 = image.find(kUpperPage1);
  if (page1 == nullptr) m.missing.push_back(describe(kUpperPage1));
  const CmisLaneMonitors mon(page1 != nullptr ? (*page1)[160 - kHalfSize] : 0);
  cmis_thresholds(m, lower, image, mon);
  if (!mon.any()) return;
  const Half* page11 = image.find(kUpperPage11);
  if (page11 == nullptr) {
    m.missing.push_back(describe(kUpperPage11));
    return;
  }
  cmis_lanes(m, lower, page11, mon);
}

}  // namespace

std::string describe(const HalfKey& key) {
  std::array<char, 48> text{};
  const char* half = key.upper ? "upper" : "lower";
  if (key.address == kAddressA2) {
    std::snprintf(text.data(), text.size(), "A2h %s", half);
  } else if (!key.upper) {
    std::snprintf(text.data(), text.size(), "lower page");
  } else if (key.bank != 0) {
    std::snprintf(text.data(), text.size(), "bank %u page %02Xh", key.bank, key.page);
  } else {
    std::snprintf(text.data(), text.size(), "page %02Xh", key.page);
  }
  return text.data();
}

Status Image::put(const HalfKey& key, std::span<const uint8_t> bytes) {
  if (bytes.size() != kHalfSize) {
    return Error{EINVAL, describe(key) + ": " + std::to_string(bytes.size()) +
                             " bytes, not the 128 of a half page"};
  }
  Half h{};
  std::memcpy(h.data(), bytes.data(), kHalfSize);
  halves_[key] = h;
  return ok_status();
}

const Half* Image::find(const HalfKey& key) const {
  auto it = halves_.find(key);
  return it == halves_.end() ? nullptr : &it->second;
}

std::vector<HalfKey> halves_to_read(const Half& lower) {
  switch (standard_of(lower[0])) {
    case Standard::sff8472:
      // Identity is all in A0h's lower half; diagnostics at A2h when the
      // module has them (byte 92 bit 6).
      if ((lower[92] & 0x40U) != 0) return {kSff8472Diagnostics};
      return {};
    case Standard::sff8636:
      if ((lower[2] & 0x04U) != 0) return {kUpperPage0};
      return {kUpperPage0, kUpperPage3};
    case Standard::cmis:
      if ((lower[2] & 0x80U) != 0) return {kUpperPage0};
      return {kUpperPage0, kUpperPage1, kUpperPage2, kUpperPage11};
    case Standard::unknown:
      break;
  }
  return {};
}

Result<Module> decode(const Image& image) {
  const Half* lower = image.find(kLowerPage);
  if (lower == nullptr) return Error{ENODATA, "the module's lower page was not read"};
  Module m;
  m.identifier = (*lower)[0];
  m.type = type_name(m.identifier);
  switch (standard_of(m.identifier)) {
    case Standard::sff8472:
      m.standard = "sff-8472";
      decode_sff8472(m, image);
      break;
    case Standard::sff8636:
      m.standard = "sff-8636";
      decode_sff8636(m, image);
      break;
    case Standard::cmis:
      m.standard = "cmis";
      decode_cmis(m, image);
      break;
    case Standard::unknown:
      break;
  }
  return m;
}

Result<Image> image_from_flat(uint32_t type, std::span<const uint8_t> flat) {
  std::vector<HalfKey> layout;
  switch (type) {
    case ETH_MODULE_SFF_8079:
      layout = {HalfKey{kAddressA0, 0, 0, false}, HalfKey{kAddressA0, 0, 0, true}};
      break;
    case ETH_MODULE_SFF_8472:
      layout = {HalfKey{kAddressA0, 0, 0, false}, HalfKey{kAddressA0, 0, 0, true},
                kSff8472Diagnostics, HalfKey{kAddressA2, 0, 0, true}};
      break;
    case ETH_MODULE_SFF_8436:
    case ETH_MODULE_SFF_8636:
      layout = {HalfKey{kAddressA0, 0, 0, false}, HalfKey{kAddressA0, 0, 0, true}};
      for (uint8_t page = 1; page <= 3; ++page)
        layout.push_back(HalfKey{kAddressA0, 0, page, true});
      break;
    default:
      return Error{EOPNOTSUPP, "module EEPROM type " + std::to_string(type) + " is not decoded"};
  }
  Image image;
  for (std::size_t i = 0; i < layout.size() && (i + 1) * kHalfSize <= flat.size(); ++i) {
    (void)image.put(layout[i], flat.subspan(i * kHalfSize, kHalfSize));
  }
  return image;
}

std::string field_text(std::span<const uint8_t> bytes) {
  std::string out;
  for (uint8_t b : bytes) out.push_back(b >= 0x20 && b < 0x7F ? static_cast<char>(b) : '?');
  // Padding: spaces, NULs and erased (0xFF) bytes at the end.
  std::size_t end = bytes.size();
  while (end > 0 && (bytes[end - 1] == ' ' || bytes[end - 1] == 0 || bytes[end - 1] == 0xFF)) {
    --end;
  }
  out.resize(end);
  return out;
}

}  // namespace rdma_exporter::module_eeprom
