#include "common/kernel/netdev/module_reader.hpp"

#include <linux/ethtool.h>

#include <cstring>

namespace rdma_exporter::module_eeprom {
namespace {

ethnl::EepromRead request_of(const HalfKey& key) {
  return ethnl::EepromRead{key.address, key.bank, key.page,
                           key.upper ? static_cast<uint32_t>(kHalfSize) : 0U,
                           static_cast<uint32_t>(kHalfSize)};
}

// The largest flat image the legacy ioctl gives (ETH_MODULE_SFF_8636_MAX_LEN).
constexpr uint32_t kMaxFlatBytes = 640;

}  // namespace

Result<Read> Reader::read(const std::string& ifname) {
  if (ethnl_) {
    auto r = read_netlink(ifname);
    // EOPNOTSUPP: no module access this way, or a kernel without the
    // message; ENOENT: no ethtool netlink at all.
    if (r || (r.error().code != EOPNOTSUPP && r.error().code != ENOENT)) return r;
  }
  if (ioctl_ != nullptr) return read_ioctl(ifname);
  return Error{EOPNOTSUPP, ifname + ": no way to read a module"};
}

Result<Read> Reader::read_netlink(const std::string& ifname) {
  auto lower = ethnl_->module_eeprom(ifname, request_of(kLowerPage));
  if (!lower) return lower.error();
  Read out;
  out.via = "netlink";
  if (Status s = out.image.put(kLowerPage, *lower); !s) return s.error();
  for (const HalfKey& key : halves_to_read(*out.image.find(kLowerPage))) {
    auto half = ethnl_->module_eeprom(ifname, request_of(key));
    if (!half) {
      out.problems.push_back(describe(key) + ": " + half.error().message);
      continue;
    }
    if (Status s = out.image.put(key, *half); !s) out.problems.push_back(s.error().message);
  }
  return out;
}

Result<Read> Reader::read_ioctl(const std::string& ifname) {
  ethtool_modinfo info{};
  info.cmd = ETHTOOL_GMODULEINFO;
  std::span<uint8_t> info_bytes(reinterpret_cast<uint8_t*>(&info), sizeof info);
  if (Status s = ioctl_->call(ifname, info_bytes); !s) return s.error();
  if (info.eeprom_len == 0 || info.eeprom_len > kMaxFlatBytes) {
    return Error{EBADMSG, ifname + ": ETHTOOL_GMODULEINFO gives an EEPROM of " +
                              std::to_string(info.eeprom_len) + " bytes"};
  }
  // struct ethtool_eeprom, then the data.
  std::vector<uint8_t> buf(sizeof(ethtool_eeprom) + info.eeprom_len);
  ethtool_eeprom request{};
  request.cmd = ETHTOOL_GMODULEEEPROM;
  request.offset = 0;
  request.len = info.eeprom_len;
  std::memcpy(buf.data(), &request, sizeof request);
  if (Status s = ioctl_->call(ifname, buf); !s) return s.error();
  auto image = image_from_flat(
      info.type, std::span<const uint8_t>(buf).subspan(sizeof(ethtool_eeprom), info.eeprom_len));
  if (!image) return Error{image.error().code, ifname + ": " + image.error().message};
  Read out;
  out.image = std::move(image).value();
  out.via = "ioctl";
  if (out.image.find(kLowerPage) != nullptr) {
    for (const HalfKey& key : halves_to_read(*out.image.find(kLowerPage))) {
      if (out.image.find(key) == nullptr) {
        out.problems.push_back(describe(key) + ": not in the " + std::to_string(info.eeprom_len) +
                               "-byte image the legacy ioctl gives");
      }
    }
  }
  return out;
}

}  // namespace rdma_exporter::module_eeprom
