#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "common/result.hpp"
#include "exporter/probe/wire/protocol.hpp"

// How UD probes are addressed: a port's Q_Key, the sender of a received
// datagram, and the flow label that picks a path.
namespace rdma_exporter::probe {

using Gid = std::array<uint8_t, 16>;

// The sender's GID from the 40 bytes a UD receive starts with: a GRH
// (InfiniBand, RoCE v1, RoCE v2 over IPv6: its source GID) or, for RoCE v2
// over IPv4, 20 unused bytes and the IPv4 header (the IPv4-mapped source
// address). Empty when the bytes are neither.
std::optional<Gid> grh_source_gid(std::span<const uint8_t, 40> grh);

// The flow label of a UD class's path number: RoCE v2 devices derive the
// UDP source port from it, so each path may take another ECMP route.
uint32_t path_flow_label(uint8_t path);

// Whether a reply that arrived from queue pair `qpn` (and GID `gid`, when
// the datagram carried one: InfiniBand within a subnet has no GRH, the LID
// said who) comes from the responder a session was set up with.
bool from_responder(const wire::UdPeer& responder, const std::optional<Gid>& gid, uint32_t qpn);

// "fe80::1" or "::ffff:10.0.0.1", for messages.
std::string gid_text(const Gid& gid);

// A port's Q_Key from `random_bytes` (RAND_bytes: 1 when it filled the
// buffer): random with the high bit clear (not a controlled Q_Key) and
// never 0; an error when there are no random bytes, since a guessable
// Q_Key lets anyone who can send to the port reach its queue pair.
Result<uint32_t> choose_qkey(int (*random_bytes)(unsigned char*, int));

// A number for a new UD session of a prober port, which its requests carry
// and its replies are routed by: random from `random_bytes`, never 0 and
// none that `taken` says is in use, so that a host on the fabric that does
// not see the requests cannot guess one to forge replies with. Nothing when
// there are no random bytes (or only numbers in use after a few tries).
std::optional<uint32_t> choose_session_number(int (*random_bytes)(unsigned char*, int),
                                              const std::function<bool(uint32_t)>& taken);

}  // namespace rdma_exporter::probe
