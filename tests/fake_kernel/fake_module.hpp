#pragma once

// Transceiver module memory maps for tests, built byte by byte from the
// specifications' layouts (SFF-8472, SFF-8636, CMIS 5). Every monitored
// value, threshold and text field differs from every other, and each is
// written beside its offset with the physical value it stands for, so a
// test can state the decoded value by hand.

#include <cstdint>
#include <map>
#include <vector>

#include "common/kernel/netdev/module_eeprom.hpp"

namespace rdma_exporter::testing {

using ModuleHalves = std::map<module_eeprom::HalfKey, std::vector<uint8_t>>;

// An SFP28 (SFF-8472) with internally calibrated diagnostics: A0h and A2h.
ModuleHalves sfp_module();
// A QSFP28 (SFF-8636), paged: lower page, pages 00h and 03h.
ModuleHalves qsfp28_module();
// A QSFP-DD (CMIS 5.0), paged, 8 lanes: lower page, pages 00h, 01h, 02h, 11h.
ModuleHalves qsfp_dd_module();

// The flat image the legacy ioctl gives for `halves` laid out as `type`
// (ETH_MODULE_SFF_8472: A0h then A2h; ETH_MODULE_SFF_8636: lower page then
// pages 00h-03h), `length` bytes; halves not in `halves` read as zeros.
std::vector<uint8_t> flat_image(const ModuleHalves& halves, uint32_t type, std::size_t length);

// Sets a big-endian 16-bit value at `offset` (0-255) of the 256-byte window
// made of `lower` (0-127) and `upper` (128-255).
void put_u16(std::vector<uint8_t>& lower, std::vector<uint8_t>& upper, std::size_t offset,
             uint16_t value);

}  // namespace rdma_exporter::testing
