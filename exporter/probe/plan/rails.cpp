#include "exporter/probe/plan/rails.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <cstring>

#include "common/address.hpp"

namespace rdma_exporter::probe {
namespace {

bool ipv4_mapped(const std::array<uint8_t, 16>& a) {
  for (int i = 0; i < 10; ++i) {
    if (a[static_cast<std::size_t>(i)] != 0) return false;
  }
  return a[10] == 0xff && a[11] == 0xff;
}

int prefix_of(const uint8_t* mask, std::size_t bytes) {
  int n = 0;
  for (std::size_t i = 0; i < bytes; ++i) {
    for (int bit = 7; bit >= 0; --bit) {
      if ((mask[i] >> bit & 1) == 0) return n;
      ++n;
    }
  }
  return n;
}

// `a` with every bit after the first `prefix` cleared.
std::array<uint8_t, 16> masked(std::array<uint8_t, 16> a, int prefix) {
  for (std::size_t i = 0; i < 16; ++i) {
    const int keep = std::max(0, std::min(8, prefix - static_cast<int>(i) * 8));
    a[i] = static_cast<uint8_t>(a[i] & (keep == 0 ? 0 : 0xff << (8 - keep)));
  }
  return a;
}

std::string format(const std::array<uint8_t, 16>& a, bool ipv4, int prefix) {
  char text[INET6_ADDRSTRLEN] = {};
  if (ipv4) {
    ::inet_ntop(AF_INET, a.data() + 12, text, sizeof text);
  } else {
    ::inet_ntop(AF_INET6, a.data(), text, sizeof text);
  }
  return std::string(text) + "/" + std::to_string(prefix);
}

}  // namespace

bool names_this_host(const std::string& address, unsigned short port,
                     const std::vector<InterfaceAddress>& addresses, const std::string& hostname) {
  ListenAddress parsed;
  if (!parse_listen_address(address, parsed) || parsed.port != port || parsed.host.empty()) {
    return false;
  }
  if (!hostname.empty() && parsed.host == hostname) return true;
  std::array<uint8_t, 16> ip{};
  if (in_addr v4{}; ::inet_pton(AF_INET, parsed.host.c_str(), &v4) == 1) {
    ip[10] = 0xff;
    ip[11] = 0xff;
    std::memcpy(ip.data() + 12, &v4, 4);
  } else if (::inet_pton(AF_INET6, parsed.host.c_str(), ip.data()) != 1) {
    return false;
  }
  for (const auto& a : addresses) {
    if (a.address == ip) return true;
  }
  return false;
}

std::vector<InterfaceAddress> interface_addresses() {
  std::vector<InterfaceAddress> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_netmask == nullptr) continue;
    InterfaceAddress a;
    if (i->ifa_addr->sa_family == AF_INET) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
      const auto* mask = reinterpret_cast<const sockaddr_in*>(i->ifa_netmask);
      a.address[10] = a.address[11] = 0xff;
      std::memcpy(a.address.data() + 12, &sin->sin_addr, 4);
      a.prefix = prefix_of(reinterpret_cast<const uint8_t*>(&mask->sin_addr), 4);
      a.ipv4 = true;
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      const auto* mask = reinterpret_cast<const sockaddr_in6*>(i->ifa_netmask);
      std::memcpy(a.address.data(), &sin6->sin6_addr, 16);
      a.prefix = prefix_of(reinterpret_cast<const uint8_t*>(&mask->sin6_addr), 16);
      a.ipv4 = false;
    } else {
      continue;
    }
    out.push_back(a);
  }
  ::freeifaddrs(list);
  return out;
}

std::string gid_subnet(const std::array<uint8_t, 16>& gid, bool ethernet,
                       const std::vector<InterfaceAddress>& addresses) {
  if (!ethernet) return format(masked(gid, 64), false, 64);
  const bool v4 = ipv4_mapped(gid);
  for (const auto& a : addresses) {
    if (a.ipv4 == v4 && a.address == gid) {
      return format(masked(gid, v4 ? 96 + a.prefix : a.prefix), v4, a.prefix);
    }
  }
  return format(gid, v4, v4 ? 32 : 128);
}

std::string rail_of(const std::string& device, uint8_t port, const std::string& subnet,
                    const std::map<std::string, std::string>& rails) {
  if (auto it = rails.find(device + "/" + std::to_string(port)); it != rails.end()) {
    return it->second;
  }
  if (auto it = rails.find(device); it != rails.end()) return it->second;
  return subnet;
}

std::vector<std::pair<std::size_t, std::size_t>> rail_pairs(const std::vector<RailPort>& local,
                                                            const std::vector<wire::PortAd>& remote,
                                                            bool cross_rail,
                                                            const std::string& only_rail) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t l = 0; l < local.size(); ++l) {
    for (std::size_t r = 0; r < remote.size(); ++r) {
      if (!only_rail.empty() && remote[r].rail != only_rail) continue;
      if (!cross_rail && remote[r].rail != local[l].rail) continue;
      out.emplace_back(l, r);
    }
  }
  return out;
}

}  // namespace rdma_exporter::probe
