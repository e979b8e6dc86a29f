#include "exporter/probe/ud/addressing.hpp"

#include <arpa/inet.h>
#include <openssl/err.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

namespace rdma_exporter::probe {

std::string gid_text(const Gid& gid) {
  std::array<char, INET6_ADDRSTRLEN> text{};
  if (::inet_ntop(AF_INET6, gid.data(), text.data(), text.size()) == nullptr) return "?";
  return text.data();
}

Result<uint32_t> choose_qkey(int (*random_bytes)(unsigned char*, int)) {
  std::array<unsigned char, 4> b{};
  if (random_bytes(b.data(), static_cast<int>(b.size())) != 1) {
    std::string why = "no random bytes for the Q_Key (RAND_bytes failed";
    if (const unsigned long e = ERR_get_error(); e != 0) {
      std::array<char, 256> text{};
      ERR_error_string_n(e, text.data(), text.size());
      why += std::string(": ") + text.data();
    }
    return Error{EIO, why + ")"};
  }
  uint32_t v = 0;
  std::memcpy(&v, b.data(), sizeof v);
  return (v & 0x7fffffffu) | 1u;  // never a controlled Q_Key, never 0
}

std::optional<uint32_t> choose_session_number(int (*random_bytes)(unsigned char*, int),
                                              const std::function<bool(uint32_t)>& taken) {
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::array<unsigned char, 4> b{};
    if (random_bytes(b.data(), static_cast<int>(b.size())) != 1) return std::nullopt;
    uint32_t v = 0;
    std::memcpy(&v, b.data(), sizeof v);
    if (v != 0 && !taken(v)) return v;
  }
  return std::nullopt;
}

std::optional<Gid> grh_source_gid(std::span<const uint8_t, 40> grh) {
  // RoCE v2 over IPv4: the first 20 bytes are unused (zero) and the IPv4
  // header follows: version 4, header length 5 words.
  const bool ipv4 = grh[20] == 0x45 &&
                    std::all_of(grh.begin(), grh.begin() + 20, [](uint8_t b) { return b == 0; });
  Gid gid{};
  if (ipv4) {
    gid[10] = 0xff;
    gid[11] = 0xff;
    std::copy_n(grh.begin() + 20 + 12, 4, gid.begin() + 12);  // the IPv4 source address
    return gid;
  }
  // A GRH or an IPv6 header: IP version 6 in the first nibble, the source
  // GID at bytes 8 to 23.
  if ((grh[0] >> 4) != 6) return std::nullopt;
  std::copy_n(grh.begin() + 8, 16, gid.begin());
  return gid;
}

bool from_responder(const wire::UdPeer& responder, const std::optional<Gid>& gid, uint32_t qpn) {
  return responder.qpn == qpn && (!gid || responder.gid == *gid);
}

uint32_t path_flow_label(uint8_t path) {
  // Spread over the 20 bits, never 0 (0 means "no flow label").
  return ((static_cast<uint32_t>(path) + 1u) * 0x9e37u) & 0xfffffu;
}

}  // namespace rdma_exporter::probe
