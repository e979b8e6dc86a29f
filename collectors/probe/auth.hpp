#pragma once

#include <array>
#include <string>

#include "collectors/probe/protocol.hpp"
#include "common/result.hpp"

// Shared-secret authentication of probe peers: the responder sends a fresh
// random nonce in its hello, the prober answers with HMAC-SHA256(secret,
// nonce || setup fields). The secret never crosses the wire.
namespace rdma_exporter::probe {

using Nonce = std::array<uint8_t, wire::kNonceSize>;
using Mac = std::array<uint8_t, wire::kMacSize>;

Nonce random_nonce();

Mac setup_mac(const std::string& secret, const Nonce& nonce, const wire::Setup& setup);
Mac setup_mac(const std::string& secret, const Nonce& nonce, const wire::UdSetup& setup);

// Constant-time check of a setup's MAC.
bool setup_mac_valid(const std::string& secret, const Nonce& nonce, const wire::Setup& setup);
bool setup_mac_valid(const std::string& secret, const Nonce& nonce, const wire::UdSetup& setup);

// Reads a secret file: its content without a trailing newline, 16 to 4096
// bytes. The error names the file.
Result<std::string> read_secret_file(const std::string& path);

}  // namespace rdma_exporter::probe
