#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "exporter/probe/wire/protocol.hpp"

// Rails: which local port probes which port of a target. Hosts with one
// RNIC per rail have NIC i of every host on the same leaf switches and,
// usually, in its own IP subnet; a port probes the target's ports on its own
// rail only, unless cross-rail probing is asked for.
namespace rdma_exporter::probe {

// An address configured on a network interface.
struct InterfaceAddress {
  std::array<uint8_t, 16> address{};  // IPv4 as an IPv4-mapped IPv6 address
  int prefix = 0;                     // prefix length of `address` in its own family
  bool ipv4 = true;
};

// The addresses of this host's interfaces (getifaddrs).
std::vector<InterfaceAddress> interface_addresses();

// Whether a target address ("host:port") is this host's own probe: its
// port is `port` and its host is one of `addresses` (written as an IP
// address) or `hostname`.
bool names_this_host(const std::string& address, unsigned short port,
                     const std::vector<InterfaceAddress>& addresses, const std::string& hostname);

// The rail a port is on by default: the subnet of its GID.
// - RoCE with an IPv4-mapped GID: the IPv4 subnet of the interface address
//   equal to it ("192.168.100.0/24"); "/32" when no interface has it.
// - RoCE with another GID: the IPv6 subnet of the matching interface address
//   ("fd00:1::/64"); "/128" when none has it.
// - InfiniBand: the GID's subnet prefix ("fe80::/64").
std::string gid_subnet(const std::array<uint8_t, 16>& gid, bool ethernet,
                       const std::vector<InterfaceAddress>& addresses);

// The rail of a port: `rails` names it by "device/port" or "device"
// (configured labels win), else its GID subnet.
std::string rail_of(const std::string& device, uint8_t port, const std::string& subnet,
                    const std::map<std::string, std::string>& rails);

// A local port as the pairing sees it.
struct RailPort {
  std::string device;
  uint8_t port = 1;
  std::string rail;
};

// Which (local, remote) index pairs to probe: every remote port on the local
// port's rail, or every remote port with `cross_rail`. `only_rail` (a
// target's own setting) keeps the remote ports on that rail alone. In order
// of local then remote index.
std::vector<std::pair<std::size_t, std::size_t>> rail_pairs(const std::vector<RailPort>& local,
                                                            const std::vector<wire::PortAd>& remote,
                                                            bool cross_rail,
                                                            const std::string& only_rail);

}  // namespace rdma_exporter::probe
