#include "common/kernel/netdev/module_eeprom.hpp"

#include <gtest/gtest.h>
#include <linux/ethtool.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "tests/fake_kernel/fake_module.hpp"

namespace rdma_exporter::module_eeprom {
namespace {

using testing::ModuleHalves;

Image image_of(const ModuleHalves& halves) {
  Image image;
  for (const auto& [key, bytes] : halves) EXPECT_TRUE(image.put(key, bytes).ok());
  return image;
}

Module decoded(const ModuleHalves& halves) {
  auto m = decode(image_of(halves));
  EXPECT_TRUE(m.ok()) << m.error().message;
  return m.ok() ? *m : Module{};
}

void expect_thresholds(const Thresholds& t, double high_alarm, double low_alarm,
                       double high_warning, double low_warning) {
  ASSERT_TRUE(t.high_alarm && t.low_alarm && t.high_warning && t.low_warning);
  EXPECT_DOUBLE_EQ(*t.high_alarm, high_alarm);
  EXPECT_DOUBLE_EQ(*t.low_alarm, low_alarm);
  EXPECT_DOUBLE_EQ(*t.high_warning, high_warning);
  EXPECT_DOUBLE_EQ(*t.low_warning, low_warning);
}

void expect_no_thresholds(const Thresholds& t) {
  EXPECT_FALSE(t.high_alarm || t.low_alarm || t.high_warning || t.low_warning);
}

std::vector<uint8_t>& half(ModuleHalves& h, uint8_t address, uint8_t page, bool upper) {
  return h[HalfKey{address, 0, page, upper}];
}

TEST(ModuleEeprom, Sff8472) {
  const Module m = decoded(testing::sfp_module());
  EXPECT_EQ(m.identifier, 0x03);
  EXPECT_EQ(m.type, "sfp");
  EXPECT_EQ(m.standard, "sff-8472");
  EXPECT_EQ(m.vendor, "ACME OPTICS");
  EXPECT_EQ(m.part_number, "SFP-25G-SR");
  EXPECT_EQ(m.revision, "A1");
  EXPECT_EQ(m.serial_number, "SFP0001");
  EXPECT_TRUE(m.diagnostics);
  EXPECT_DOUBLE_EQ(*m.temperature_celsius, 31.25);
  EXPECT_DOUBLE_EQ(*m.supply_voltage_volts, 3.3);
  ASSERT_EQ(m.lanes.size(), 1U);
  EXPECT_DOUBLE_EQ(*m.lanes[0].tx_bias_amperes, 0.0065);
  EXPECT_DOUBLE_EQ(*m.lanes[0].tx_power_watts, 0.0006);
  EXPECT_DOUBLE_EQ(*m.lanes[0].rx_power_watts, 0.00003);
  expect_thresholds(m.temperature_thresholds, 75, -5, 70, -3);
  expect_thresholds(m.supply_voltage_thresholds, 3.6, 3.0, 3.5, 3.1);
  expect_thresholds(m.tx_bias_thresholds, 0.012, 0.002, 0.010, 0.003);
  expect_thresholds(m.tx_power_thresholds, 0.0015, 0.0001, 0.0012, 0.00015);
  expect_thresholds(m.rx_power_thresholds, 0.002, 0.00002, 0.0016, 0.00004);
  EXPECT_EQ(m.flags, (std::vector<Flag>{{"rx_power_low_warning", 0}}));
  EXPECT_TRUE(m.missing.empty());
}

TEST(ModuleEeprom, Sff8472EveryFlagBit) {
  ModuleHalves h = testing::sfp_module();
  auto& a2 = half(h, kAddressA2, 0, false);
  a2[110] = 0x06;  // TX_FAULT and RX_LOS
  a2[112] = 0xA5;  // temperature high, Vcc high, bias low, tx power low (alarms)
  a2[113] = 0x80;  // rx power high alarm
  a2[116] = 0x5A;  // temperature low, Vcc low, bias high, tx power high (warnings)
  a2[117] = 0x00;
  const Module m = decoded(h);
  const std::vector<Flag> expected = {
      {"tx_fault", 0},
      {"rx_los", 0},
      {"temperature_high_alarm", std::nullopt},
      {"supply_voltage_high_alarm", std::nullopt},
      {"tx_bias_low_alarm", 0},
      {"tx_power_low_alarm", 0},
      {"rx_power_high_alarm", 0},
      {"temperature_low_warning", std::nullopt},
      {"supply_voltage_low_warning", std::nullopt},
      {"tx_bias_high_warning", 0},
      {"tx_power_high_warning", 0},
  };
  EXPECT_EQ(m.flags, expected);
}

TEST(ModuleEeprom, Sff8472ExternallyCalibrated) {
  ModuleHalves h = testing::sfp_module();
  half(h, kAddressA0, 0, false)[92] = 0x58;  // diagnostics, externally calibrated, average
  auto& a2 = half(h, kAddressA2, 0, false);
  std::vector<uint8_t> none(128, 0);
  // Rx_PWR(1) = 2.0 and Rx_PWR(0) = 10.0 (big-endian IEEE 754), the rest 0.
  auto put_float = [&](std::size_t offset, float f) {
    const auto bits = std::bit_cast<uint32_t>(f);
    a2[offset] = static_cast<uint8_t>(bits >> 24U);
    a2[offset + 1] = static_cast<uint8_t>(bits >> 16U);
    a2[offset + 2] = static_cast<uint8_t>(bits >> 8U);
    a2[offset + 3] = static_cast<uint8_t>(bits);
  };
  put_float(56, 0);
  put_float(60, 0);
  put_float(64, 0);
  put_float(68, 2.0F);
  put_float(72, 10.0F);
  testing::put_u16(a2, none, 76, 0x0100);  // bias slope 1.0
  testing::put_u16(a2, none, 78, 50);      // bias offset +50 units
  testing::put_u16(a2, none, 80, 0x0080);  // tx power slope 0.5
  testing::put_u16(a2, none, 82, 0xFF9C);  // tx power offset -100 units
  testing::put_u16(a2, none, 84, 0x0200);  // temperature slope 2.0
  testing::put_u16(a2, none, 86, 256);     // temperature offset +1 C
  testing::put_u16(a2, none, 88, 0x0100);  // voltage slope 1.0
  testing::put_u16(a2, none, 90, 0xFC18);  // voltage offset -1000 units (-0.1 V)
  const Module m = decoded(h);
  EXPECT_DOUBLE_EQ(*m.temperature_celsius, 63.5);          // (2 x 8000 + 256) / 256
  EXPECT_DOUBLE_EQ(*m.supply_voltage_volts, 3.2);          // (33000 - 1000) x 100 uV
  EXPECT_DOUBLE_EQ(*m.lanes[0].tx_bias_amperes, 0.0066);   // (3250 + 50) x 2 uA
  EXPECT_DOUBLE_EQ(*m.lanes[0].tx_power_watts, 0.00029);   // (0.5 x 6000 - 100) x 0.1 uW
  EXPECT_DOUBLE_EQ(*m.lanes[0].rx_power_watts, 0.000061);  // (2 x 300 + 10) x 0.1 uW
  // Thresholds go through the same calibration: 75 C -> 2 x 75 + 1.
  EXPECT_DOUBLE_EQ(*m.temperature_thresholds.high_alarm, 151);
}

// What halves_to_read asks for is what the decoders read: a module read
// with exactly those halves decodes with nothing missing, and without any
// one of them the decoder names it. Each standard, paged.
TEST(ModuleEeprom, TheHalvesToReadAreThoseTheDecoderReads) {
  for (const ModuleHalves& full :
       {testing::sfp_module(), testing::qsfp28_module(), testing::qsfp_dd_module()}) {
    Half lower{};
    std::memcpy(lower.data(), full.at(kLowerPage).data(), kHalfSize);
    const std::vector<HalfKey> wanted = halves_to_read(lower);
    ASSERT_FALSE(wanted.empty());
    ModuleHalves read = {{kLowerPage, full.at(kLowerPage)}};
    for (const HalfKey& key : wanted) read[key] = full.at(key);
    const Module m = decoded(read);
    EXPECT_TRUE(m.missing.empty()) << m.standard << ": " << m.missing.front();
    for (const HalfKey& key : wanted) {
      ModuleHalves without = read;
      without.erase(key);
      const Module less = decoded(without);
      EXPECT_NE(std::find(less.missing.begin(), less.missing.end(), describe(key)),
                less.missing.end())
          << m.standard << ": " << describe(key);
    }
  }
}

TEST(ModuleEeprom, Sff8472WithoutDiagnostics) {
  ModuleHalves h = testing::sfp_module();
  half(h, kAddressA0, 0, false)[92] = 0x00;
  EXPECT_TRUE(halves_to_read(Half{}).empty());
  Half lower{};
  std::memcpy(lower.data(), half(h, kAddressA0, 0, false).data(), kHalfSize);
  EXPECT_TRUE(halves_to_read(lower).empty());
  h.erase(HalfKey{kAddressA2, 0, 0, false});
  const Module m = decoded(h);
  EXPECT_EQ(m.vendor, "ACME OPTICS");
  EXPECT_FALSE(m.diagnostics);
  EXPECT_FALSE(m.temperature_celsius);
  EXPECT_TRUE(m.lanes.empty());
  EXPECT_TRUE(m.missing.empty());  // nothing was expected
}

TEST(ModuleEeprom, Sff8472DiagnosticsNotRead) {
  ModuleHalves h = testing::sfp_module();
  h.erase(HalfKey{kAddressA2, 0, 0, false});
  const Module m = decoded(h);
  EXPECT_EQ(m.serial_number, "SFP0001");
  EXPECT_FALSE(m.diagnostics);
  EXPECT_TRUE(m.lanes.empty());
  EXPECT_EQ(m.missing, std::vector<std::string>{"A2h lower"});
}

TEST(ModuleEeprom, Sff8636) {
  const Module m = decoded(testing::qsfp28_module());
  EXPECT_EQ(m.type, "qsfp28");
  EXPECT_EQ(m.standard, "sff-8636");
  EXPECT_EQ(m.vendor, "MELLANOX");
  EXPECT_EQ(m.part_number, "MMA1B00-C100D");
  EXPECT_EQ(m.revision, "B2");
  EXPECT_EQ(m.serial_number, "MT2021FT00042");
  EXPECT_DOUBLE_EQ(*m.temperature_celsius, 40.5);
  EXPECT_DOUBLE_EQ(*m.supply_voltage_volts, 3.25);
  ASSERT_EQ(m.lanes.size(), 4U);
  const double rx[] = {0.0008, 0, 0.0009, 0.0011};
  const double bias[] = {0.007, 0.0072, 0.0074, 0.0076};
  const double tx[] = {0.0005, 0.00055, 0.0006, 0.00065};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(*m.lanes[i].rx_power_watts, rx[i]) << i;
    EXPECT_DOUBLE_EQ(*m.lanes[i].tx_bias_amperes, bias[i]) << i;
    EXPECT_DOUBLE_EQ(*m.lanes[i].tx_power_watts, tx[i]) << i;
  }
  expect_thresholds(m.temperature_thresholds, 80, -10, 75, -5);
  expect_thresholds(m.supply_voltage_thresholds, 3.63, 2.97, 3.465, 3.135);
  expect_thresholds(m.rx_power_thresholds, 0.0034, 0.00005, 0.0022, 0.0001);
  expect_thresholds(m.tx_bias_thresholds, 0.015, 0.001, 0.012, 0.002);
  expect_thresholds(m.tx_power_thresholds, 0.0035, 0.00008, 0.0025, 0.00016);
  const std::vector<Flag> flags = {{"rx_los", 1},
                                   {"rx_power_low_alarm", 1},
                                   {"rx_power_low_warning", 1},
                                   {"tx_bias_low_alarm", 2}};
  EXPECT_EQ(m.flags, flags);
  EXPECT_TRUE(m.missing.empty());
}

TEST(ModuleEeprom, Sff8636EveryFlagByte) {
  ModuleHalves h = testing::qsfp28_module();
  auto& lower = half(h, kAddressA0, 0, false);
  lower[3] = 0x81;  // rx LOS lane 1, tx LOS lane 4
  lower[4] = 0x08;  // tx fault lane 4
  lower[5] = 0x24;  // rx CDR loss of lock lane 3, tx CDR loss of lock lane 2
  lower[6] = 0x80;  // temperature high alarm
  lower[7] = 0x10;  // Vcc low warning
  lower[9] = 0x00;
  lower[12] = 0x00;
  lower[10] = 0x01;  // lane 4: rx power low warning
  lower[11] = 0x80;  // lane 1: tx bias high alarm
  lower[13] = 0x02;  // lane 2: tx power high warning
  lower[14] = 0x40;  // lane 3: tx power low alarm
  const std::vector<Flag> expected = {
      {"rx_los", 0},
      {"tx_los", 3},
      {"tx_fault", 3},
      {"rx_cdr_lol", 2},
      {"tx_cdr_lol", 1},
      {"temperature_high_alarm", std::nullopt},
      {"supply_voltage_low_warning", std::nullopt},
      {"rx_power_low_warning", 3},
      {"tx_bias_high_alarm", 0},
      {"tx_power_high_warning", 1},
      {"tx_power_low_alarm", 2},
  };
  EXPECT_EQ(decoded(h).flags, expected);
}

TEST(ModuleEeprom, Sff8636WithoutTransmitPowerMonitor) {
  ModuleHalves h = testing::qsfp28_module();
  half(h, kAddressA0, 0, true)[220 - 128] = 0x08;  // average rx power, no tx power
  half(h, kAddressA0, 0, false)[13] = 0xFF;        // flags of a monitor that is not there
  const Module m = decoded(h);
  for (const Lane& l : m.lanes) {
    EXPECT_FALSE(l.tx_power_watts);
    EXPECT_TRUE(l.rx_power_watts);
  }
  expect_no_thresholds(m.tx_power_thresholds);
  for (const Flag& f : m.flags) EXPECT_FALSE(f.name.starts_with("tx_power")) << f.name;
}

TEST(ModuleEeprom, Sff8636FlatMemory) {
  ModuleHalves h = testing::qsfp28_module();
  half(h, kAddressA0, 0, false)[2] = 0x04;  // flat memory: page 00h only
  Half lower{};
  std::memcpy(lower.data(), half(h, kAddressA0, 0, false).data(), kHalfSize);
  EXPECT_EQ(halves_to_read(lower), (std::vector<HalfKey>{HalfKey{kAddressA0, 0, 0, true}}));
  h.erase(HalfKey{kAddressA0, 0, 3, true});
  const Module m = decoded(h);
  EXPECT_DOUBLE_EQ(*m.temperature_celsius, 40.5);
  expect_no_thresholds(m.temperature_thresholds);
  expect_no_thresholds(m.rx_power_thresholds);
  EXPECT_TRUE(m.missing.empty());
}

TEST(ModuleEeprom, Sff8636PagesNotRead) {
  ModuleHalves h = testing::qsfp28_module();
  Half lower{};
  std::memcpy(lower.data(), half(h, kAddressA0, 0, false).data(), kHalfSize);
  EXPECT_EQ(halves_to_read(lower), (std::vector<HalfKey>{HalfKey{kAddressA0, 0, 0, true},
                                                         HalfKey{kAddressA0, 0, 3, true}}));
  h.erase(HalfKey{kAddressA0, 0, 3, true});
  h.erase(HalfKey{kAddressA0, 0, 0, true});
  const Module m = decoded(h);
  EXPECT_EQ(m.vendor, "");
  // Monitors are in the lower page; without page 00h transmit power is
  // taken as monitored.
  EXPECT_DOUBLE_EQ(*m.lanes[3].tx_power_watts, 0.00065);
  expect_no_thresholds(m.temperature_thresholds);
  EXPECT_EQ(m.missing, (std::vector<std::string>{"page 00h", "page 03h"}));
}

TEST(ModuleEeprom, Cmis) {
  const Module m = decoded(testing::qsfp_dd_module());
  EXPECT_EQ(m.type, "qsfp-dd");
  EXPECT_EQ(m.standard, "cmis");
  EXPECT_EQ(m.vendor, "INNOLIGHT");
  EXPECT_EQ(m.part_number, "T-DP4CNT-N00");
  EXPECT_EQ(m.revision, "1A");
  EXPECT_EQ(m.serial_number, "INKBD0123456");
  EXPECT_DOUBLE_EQ(*m.temperature_celsius, 45.75);
  EXPECT_DOUBLE_EQ(*m.supply_voltage_volts, 3.28);
  ASSERT_EQ(m.lanes.size(), 8U);
  const double tx[] = {0.001, 0.0011, 0.0012, 0.0013, 0.0014, 0.0015, 0.0016, 0.0017};
  const double bias[] = {0.008, 0.0084, 0.0088, 0.0092, 0.0096, 0.010, 0.0104, 0.0108};
  const double rx[] = {0.0009, 0.00095, 0.001, 0.00105, 0.0011, 0.00115, 0.0012, 0};
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_DOUBLE_EQ(*m.lanes[i].tx_power_watts, tx[i]) << i;
    EXPECT_DOUBLE_EQ(*m.lanes[i].tx_bias_amperes, bias[i]) << i;
    EXPECT_DOUBLE_EQ(*m.lanes[i].rx_power_watts, rx[i]) << i;
  }
  expect_thresholds(m.temperature_thresholds, 85, -5, 80, -2);
  expect_thresholds(m.supply_voltage_thresholds, 3.6, 3.0, 3.5, 3.1);
  expect_thresholds(m.tx_power_thresholds, 0.005, 0.0002, 0.004, 0.0003);
  expect_thresholds(m.tx_bias_thresholds, 0.020, 0.002, 0.018, 0.003);
  expect_thresholds(m.rx_power_thresholds, 0.0045, 0.00006, 0.0035, 0.00012);
  const std::vector<Flag> flags = {{"temperature_high_warning", std::nullopt},
                                   {"tx_fault", 2},
                                   {"rx_power_low_alarm", 7},
                                   {"rx_power_low_warning", 7},
                                   {"rx_los", 7}};
  EXPECT_EQ(m.flags, flags);
  EXPECT_TRUE(m.missing.empty());
}

TEST(ModuleEeprom, CmisLanesOfTheFirstApplication) {
  ModuleHalves h = testing::qsfp_dd_module();
  half(h, kAddressA0, 0, false)[88] = 0x44;  // 4 media lanes
  const Module m = decoded(h);
  ASSERT_EQ(m.lanes.size(), 4U);
  // rx LOS on lane 8 is outside the 4 lanes in use.
  for (const Flag& f : m.flags) EXPECT_NE(f.lane, std::optional<int>(7)) << f.name;
}

TEST(ModuleEeprom, CmisMonitorsNotAdvertised) {
  ModuleHalves h = testing::qsfp_dd_module();
  half(h, kAddressA0, 1, true)[160 - 128] = 0x04 | 0x18;  // rx power only; reserved multiplier
  const Module m = decoded(h);
  ASSERT_EQ(m.lanes.size(), 8U);
  EXPECT_FALSE(m.lanes[0].tx_power_watts);
  EXPECT_FALSE(m.lanes[0].tx_bias_amperes);
  EXPECT_DOUBLE_EQ(*m.lanes[0].rx_power_watts, 0.0009);
  expect_no_thresholds(m.tx_power_thresholds);
  expect_no_thresholds(m.tx_bias_thresholds);
  // tx fault is not a monitor's flag: still reported.
  EXPECT_EQ(m.flags[1], (Flag{"tx_fault", 2}));
}

TEST(ModuleEeprom, CmisFlatMemoryAndMissingPages) {
  ModuleHalves h = testing::qsfp_dd_module();
  half(h, kAddressA0, 0, false)[2] = 0x80;  // flat memory (a passive cable)
  Half lower{};
  std::memcpy(lower.data(), half(h, kAddressA0, 0, false).data(), kHalfSize);
  EXPECT_EQ(halves_to_read(lower), (std::vector<HalfKey>{HalfKey{kAddressA0, 0, 0, true}}));
  Module m = decoded(h);
  EXPECT_EQ(m.vendor, "INNOLIGHT");
  EXPECT_FALSE(m.diagnostics);
  EXPECT_FALSE(m.temperature_celsius);
  EXPECT_TRUE(m.lanes.empty());

  ModuleHalves paged = testing::qsfp_dd_module();
  paged.erase(HalfKey{kAddressA0, 0, 0x11, true});
  paged.erase(HalfKey{kAddressA0, 0, 2, true});
  m = decoded(paged);
  EXPECT_DOUBLE_EQ(*m.temperature_celsius, 45.75);
  EXPECT_TRUE(m.lanes.empty());
  expect_no_thresholds(m.temperature_thresholds);
  EXPECT_EQ(m.missing, (std::vector<std::string>{"page 02h", "page 11h"}));
}

TEST(ModuleEeprom, UnknownIdentifierAndNoLowerPage) {
  ModuleHalves h = {{kLowerPage, std::vector<uint8_t>(128, 0x42)}};
  const Module m = decoded(h);
  EXPECT_EQ(m.type, "0x42");
  EXPECT_EQ(m.standard, "");
  EXPECT_FALSE(m.diagnostics);
  Half lower{};
  lower[0] = 0x42;
  EXPECT_TRUE(halves_to_read(lower).empty());
  auto none = decode(Image{});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, ENODATA);
}

TEST(ModuleEeprom, ImageTakesWholeHalvesOnly) {
  Image image;
  const std::vector<uint8_t> short_half(127, 1);
  auto s = image.put(kLowerPage, short_half);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("127 bytes"), std::string::npos) << s.error().message;
  EXPECT_EQ(image.find(kLowerPage), nullptr);
}

TEST(ModuleEeprom, FlatImages) {
  const auto sfp = testing::flat_image(testing::sfp_module(), ETH_MODULE_SFF_8472, 512);
  auto image = image_from_flat(ETH_MODULE_SFF_8472, sfp);
  ASSERT_TRUE(image.ok());
  EXPECT_EQ(image->halves().size(), 4U);
  auto m = decode(*image);
  EXPECT_DOUBLE_EQ(*m->lanes[0].rx_power_watts, 0.00003);

  const auto qsfp = testing::flat_image(testing::qsfp28_module(), ETH_MODULE_SFF_8636, 640);
  image = image_from_flat(ETH_MODULE_SFF_8636, qsfp);
  ASSERT_TRUE(image.ok());
  ASSERT_NE(image->find(HalfKey{kAddressA0, 0, 3, true}), nullptr);
  EXPECT_DOUBLE_EQ(*decode(*image)->tx_power_thresholds.high_alarm, 0.0035);
  // Page 03h sits at 512: 0x88B8 there is its tx power high alarm.
  EXPECT_EQ(qsfp[512 + 64], 0x88);

  // An image cut short gives the whole halves it holds: A0h only.
  image = image_from_flat(ETH_MODULE_SFF_8472, std::span(sfp).first(300));
  ASSERT_TRUE(image.ok());
  EXPECT_EQ(image->halves().size(), 2U);
  EXPECT_EQ(decode(*image)->missing, std::vector<std::string>{"A2h lower"});

  auto unknown = image_from_flat(9, sfp);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, EOPNOTSUPP);
}

TEST(ModuleEeprom, FieldText) {
  const uint8_t padded[] = {'A', 'B', ' ', 'C', ' ', ' ', 0, 0xFF};
  EXPECT_EQ(field_text(padded), "AB C");
  const uint8_t odd[] = {'X', 0x01, 0xC3, 'Y'};
  EXPECT_EQ(field_text(odd), "X??Y");
  const uint8_t blank[] = {0xFF, 0xFF};
  EXPECT_EQ(field_text(blank), "");
}

TEST(ModuleEeprom, Describe) {
  EXPECT_EQ(describe(kLowerPage), "lower page");
  EXPECT_EQ(describe(HalfKey{kAddressA0, 0, 0x11, true}), "page 11h");
  EXPECT_EQ(describe(HalfKey{kAddressA0, 1, 0x11, true}), "bank 1 page 11h");
  EXPECT_EQ(describe(HalfKey{kAddressA2, 0, 0, false}), "A2h lower");
}

}  // namespace
}  // namespace rdma_exporter::module_eeprom
