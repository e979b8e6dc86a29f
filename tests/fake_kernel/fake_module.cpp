#include "tests/fake_kernel/fake_module.hpp"

#include <linux/ethtool.h>

#include <cstring>
#include <string>

namespace rdma_exporter::testing {
namespace {

using module_eeprom::HalfKey;
using module_eeprom::kAddressA0;
using module_eeprom::kAddressA2;

// One 256-byte page window being built.
struct Window {
  std::vector<uint8_t> lower = std::vector<uint8_t>(128, 0);
  std::vector<uint8_t> upper = std::vector<uint8_t>(128, 0);

  uint8_t& at(std::size_t offset) { return offset < 128 ? lower[offset] : upper[offset - 128]; }
  void u16(std::size_t offset, uint16_t value) { put_u16(lower, upper, offset, value); }
  void s16(std::size_t offset, int16_t value) { u16(offset, static_cast<uint16_t>(value)); }
  // ASCII padded with spaces to `width`.
  void text(std::size_t offset, std::size_t width, const std::string& s) {
    for (std::size_t i = 0; i < width; ++i) at(offset + i) = i < s.size() ? s[i] : ' ';
  }
};

}  // namespace

void put_u16(std::vector<uint8_t>& lower, std::vector<uint8_t>& upper, std::size_t offset,
             uint16_t value) {
  auto at = [&](std::size_t o) -> uint8_t& { return o < 128 ? lower[o] : upper[o - 128]; };
  at(offset) = static_cast<uint8_t>(value >> 8U);
  at(offset + 1) = static_cast<uint8_t>(value & 0xFFU);
}

ModuleHalves sfp_module() {
  Window a0;
  a0.at(0) = 0x03;  // SFP
  a0.text(20, 16, "ACME OPTICS");
  a0.text(40, 16, "SFP-25G-SR");
  a0.text(56, 4, "A1");
  a0.text(68, 16, "SFP0001");
  a0.at(92) = 0x68;  // diagnostics implemented, internally calibrated, average rx power
  a0.at(93) = 0x80;  // alarm and warning flags implemented
  Window a2;
  // Thresholds: high alarm, low alarm, high warning, low warning.
  a2.s16(0, 75 * 256);  // 75 C
  a2.s16(2, -5 * 256);  // -5 C
  a2.s16(4, 70 * 256);  // 70 C
  a2.s16(6, -3 * 256);  // -3 C
  a2.u16(8, 36000);     // 3.6 V
  a2.u16(10, 30000);    // 3.0 V
  a2.u16(12, 35000);    // 3.5 V
  a2.u16(14, 31000);    // 3.1 V
  a2.u16(16, 6000);     // 12 mA
  a2.u16(18, 1000);     // 2 mA
  a2.u16(20, 5000);     // 10 mA
  a2.u16(22, 1500);     // 3 mA
  a2.u16(24, 15000);    // 1.5 mW
  a2.u16(26, 1000);     // 0.1 mW
  a2.u16(28, 12000);    // 1.2 mW
  a2.u16(30, 1500);     // 0.15 mW
  a2.u16(32, 20000);    // 2 mW
  a2.u16(34, 200);      // 0.02 mW
  a2.u16(36, 16000);    // 1.6 mW
  a2.u16(38, 400);      // 0.04 mW
  // Monitors.
  a2.s16(96, 8000);   // 31.25 C
  a2.u16(98, 33000);  // 3.3 V
  a2.u16(100, 3250);  // 6.5 mA
  a2.u16(102, 6000);  // 0.6 mW sent
  a2.u16(104, 300);   // 0.03 mW received: under the low warning
  a2.at(110) = 0x00;  // no TX_FAULT, no RX_LOS
  a2.at(117) = 0x40;  // rx power low warning
  return {{HalfKey{kAddressA0, 0, 0, false}, a0.lower},
          {HalfKey{kAddressA0, 0, 0, true}, a0.upper},
          {HalfKey{kAddressA2, 0, 0, false}, a2.lower},
          {HalfKey{kAddressA2, 0, 0, true}, a2.upper}};
}

ModuleHalves qsfp28_module() {
  Window p0;          // lower page and page 00h
  p0.at(0) = 0x11;    // QSFP28
  p0.at(2) = 0x00;    // paged memory
  p0.at(3) = 0x02;    // rx LOS on lane 2
  p0.at(9) = 0x05;    // lane 2 (low nibble): rx power low alarm and low warning
  p0.at(12) = 0x40;   // lane 3 (high nibble): tx bias low alarm
  p0.s16(22, 10368);  // 40.5 C
  p0.u16(26, 32500);  // 3.25 V
  p0.u16(34, 8000);   // rx lane 1: 0.8 mW
  p0.u16(36, 0);      // rx lane 2: nothing received
  p0.u16(38, 9000);   // rx lane 3: 0.9 mW
  p0.u16(40, 11000);  // rx lane 4: 1.1 mW
  p0.u16(42, 3500);   // bias lane 1: 7 mA
  p0.u16(44, 3600);   // 7.2 mA
  p0.u16(46, 3700);   // 7.4 mA
  p0.u16(48, 3800);   // 7.6 mA
  p0.u16(50, 5000);   // tx lane 1: 0.5 mW
  p0.u16(52, 5500);   // 0.55 mW
  p0.u16(54, 6000);   // 0.6 mW
  p0.u16(56, 6500);   // 0.65 mW
  p0.at(128) = 0x11;
  p0.text(148, 16, "MELLANOX");
  p0.text(168, 16, "MMA1B00-C100D");
  p0.text(184, 2, "B2");
  p0.text(196, 16, "MT2021FT00042");
  p0.at(220) = 0x0C;  // average rx power, tx power monitored
  Window p3;
  p3.s16(128, 80 * 256);   // 80 C
  p3.s16(130, -10 * 256);  // -10 C
  p3.s16(132, 75 * 256);   // 75 C
  p3.s16(134, -5 * 256);   // -5 C
  p3.u16(144, 36300);      // 3.63 V
  p3.u16(146, 29700);      // 2.97 V
  p3.u16(148, 34650);      // 3.465 V
  p3.u16(150, 31350);      // 3.135 V
  p3.u16(176, 34000);      // rx 3.4 mW
  p3.u16(178, 500);        // 0.05 mW
  p3.u16(180, 22000);      // 2.2 mW
  p3.u16(182, 1000);       // 0.1 mW
  p3.u16(184, 7500);       // bias 15 mA
  p3.u16(186, 500);        // 1 mA
  p3.u16(188, 6000);       // 12 mA
  p3.u16(190, 1000);       // 2 mA
  p3.u16(192, 35000);      // tx 3.5 mW
  p3.u16(194, 800);        // 0.08 mW
  p3.u16(196, 25000);      // 2.5 mW
  p3.u16(198, 1600);       // 0.16 mW
  return {{HalfKey{kAddressA0, 0, 0, false}, p0.lower},
          {HalfKey{kAddressA0, 0, 0, true}, p0.upper},
          {HalfKey{kAddressA0, 0, 3, true}, p3.upper}};
}

ModuleHalves qsfp_dd_module() {
  Window p0;
  p0.at(0) = 0x18;    // QSFP-DD
  p0.at(1) = 0x50;    // CMIS 5.0
  p0.at(2) = 0x00;    // paged memory
  p0.at(9) = 0x04;    // temperature high warning (latched)
  p0.s16(14, 11712);  // 45.75 C
  p0.u16(16, 32800);  // 3.28 V
  p0.at(86) = 0x11;   // first application: host and media interface ids
  p0.at(87) = 0x02;
  p0.at(88) = 0x88;  // 8 host lanes, 8 media lanes
  p0.at(128) = 0x18;
  p0.text(129, 16, "INNOLIGHT");
  p0.text(148, 16, "T-DP4CNT-N00");
  p0.text(164, 2, "1A");
  p0.text(166, 16, "INKBD0123456");
  Window p1;
  p1.at(160) = 0x0F;  // bias, tx power and rx power monitored; bias in 2 uA x 2
  Window p2;
  p2.s16(128, 85 * 256);  // 85 C
  p2.s16(130, -5 * 256);  // -5 C
  p2.s16(132, 80 * 256);  // 80 C
  p2.s16(134, -2 * 256);  // -2 C
  p2.u16(136, 36000);     // 3.6 V
  p2.u16(138, 30000);     // 3.0 V
  p2.u16(140, 35000);     // 3.5 V
  p2.u16(142, 31000);     // 3.1 V
  p2.u16(176, 50000);     // tx 5 mW
  p2.u16(178, 2000);      // 0.2 mW
  p2.u16(180, 40000);     // 4 mW
  p2.u16(182, 3000);      // 0.3 mW
  p2.u16(184, 5000);      // bias 20 mA (x2 multiplier: 4 uA per unit)
  p2.u16(186, 500);       // 2 mA
  p2.u16(188, 4500);      // 18 mA
  p2.u16(190, 750);       // 3 mA
  p2.u16(192, 45000);     // rx 4.5 mW
  p2.u16(194, 600);       // 0.06 mW
  p2.u16(196, 35000);     // 3.5 mW
  p2.u16(198, 1200);      // 0.12 mW
  Window p11;
  p11.at(147) = 0x80;  // rx LOS on lane 8
  p11.at(150) = 0x80;  // rx power low alarm on lane 8
  p11.at(152) = 0x80;  // rx power low warning on lane 8
  p11.at(135) = 0x04;  // tx fault on lane 3
  for (std::size_t lane = 0; lane < 8; ++lane) {
    p11.u16(154 + 2 * lane, static_cast<uint16_t>(10000 + 1000 * lane));  // tx 1.0 + 0.1*lane mW
    p11.u16(170 + 2 * lane, static_cast<uint16_t>(2000 + 100 * lane));    // bias 8 + 0.4*lane mA
    p11.u16(186 + 2 * lane, lane == 7 ? 0 : static_cast<uint16_t>(9000 + 500 * lane));  // rx
  }
  return {{HalfKey{kAddressA0, 0, 0, false}, p0.lower},
          {HalfKey{kAddressA0, 0, 0, true}, p0.upper},
          {HalfKey{kAddressA0, 0, 1, true}, p1.upper},
          {HalfKey{kAddressA0, 0, 2, true}, p2.upper},
          {HalfKey{kAddressA0, 0, 0x11, true}, p11.upper}};
}

std::vector<uint8_t> flat_image(const ModuleHalves& halves, uint32_t type, std::size_t length) {
  std::vector<HalfKey> layout;
  if (type == ETH_MODULE_SFF_8472 || type == ETH_MODULE_SFF_8079) {
    layout = {HalfKey{kAddressA0, 0, 0, false}, HalfKey{kAddressA0, 0, 0, true},
              HalfKey{kAddressA2, 0, 0, false}, HalfKey{kAddressA2, 0, 0, true}};
  } else {
    layout = {HalfKey{kAddressA0, 0, 0, false}, HalfKey{kAddressA0, 0, 0, true},
              HalfKey{kAddressA0, 0, 1, true}, HalfKey{kAddressA0, 0, 2, true},
              HalfKey{kAddressA0, 0, 3, true}};
  }
  std::vector<uint8_t> out(length, 0);
  for (std::size_t i = 0; i < layout.size() && (i + 1) * 128 <= length; ++i) {
    auto it = halves.find(layout[i]);
    if (it != halves.end()) std::memcpy(out.data() + i * 128, it->second.data(), 128);
  }
  return out;
}

}  // namespace rdma_exporter::testing
