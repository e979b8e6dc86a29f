#pragma once

#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "collectors/probe/wire/protocol.hpp"
#include "common/result.hpp"

// Shared-secret authentication of both ends of a probe session. The
// responder's hello carries a fresh random nonce and the key ids of the
// secrets it accepts; the prober answers with its own nonce, the address it
// dialled and HMAC-SHA256(secret, "setup" ‖ responder nonce ‖ set-up); the
// responder proves the same secret with HMAC-SHA256(secret, "accept" ‖
// set-up MAC ‖ accept). The secret never crosses the wire; a set-up or an
// accept is good for one session only, and a set-up only at the address the
// prober dialled.
namespace rdma_exporter::probe {

using Nonce = std::array<uint8_t, wire::kNonceSize>;
using Mac = std::array<uint8_t, wire::kMacSize>;

Nonce random_nonce();

// A secret's public name: the first 8 bytes of HMAC-SHA256(secret,
// "rdma_exporter probe key id"). It tells which secret to use, nothing of
// the secret itself.
wire::KeyId key_id(const std::string& secret);

Mac setup_mac(const std::string& secret, const Nonce& nonce, const wire::Setup& setup);
Mac setup_mac(const std::string& secret, const Nonce& nonce, const wire::UdSetup& setup);
Mac accept_mac(const std::string& secret, const Mac& setup, const wire::Accept& accept);
Mac accept_mac(const std::string& secret, const Mac& setup, const wire::UdAccept& accept);

// Constant-time comparison of two MACs.
bool mac_equal(const Mac& a, const Mac& b);

// The secrets one exporter holds: the current one and, for a grace period
// after a rotation, the previous one. Both ends of a session use the same
// keyring: a responder accepts either secret, a prober signs with the first
// of its secrets that the responder's hello lists.
class Keyring {
 public:
  using Clock = std::chrono::steady_clock;

  Keyring() = default;  // no secret: nothing is authenticated
  explicit Keyring(std::string secret) : current_(std::move(secret)) {}

  bool empty() const { return current_.empty(); }
  // A new current secret; the old one stays accepted until `until`. The
  // same secret again changes nothing; an empty one ends authentication.
  // Returns whether anything changed.
  bool rotate(std::string secret, Clock::time_point until);
  // Whether `secret` is one of those in use at `now`.
  bool accepts(const std::string& secret, Clock::time_point now) const;
  // The key ids of the secrets in use at `now`, the current one first.
  std::vector<wire::KeyId> keys(Clock::time_point now) const;
  // The secret, in use at `now`, that made `mac` over the set-up; null if
  // none did.
  const std::string* verify(const Nonce& nonce, const wire::Setup& setup,
                            Clock::time_point now) const;
  const std::string* verify(const Nonce& nonce, const wire::UdSetup& setup,
                            Clock::time_point now) const;
  // The secret to sign for a responder that accepts `keys`: the first of
  // this keyring's secrets in use at `now` that is listed; null if none.
  const std::string* choose(const std::vector<wire::KeyId>& keys, Clock::time_point now) const;

 private:
  std::vector<const std::string*> secrets(Clock::time_point now) const;

  std::string current_;
  std::string previous_;
  Clock::time_point previous_until_{};
};

// Reads a secret file: its content without a trailing newline, 16 to 4096
// bytes. A file with any permission for others (neither the owner nor the
// group), or that its group may write, is refused, as ssh refuses a private
// key others can read. The error names the file.
Result<std::string> read_secret_file(const std::string& path);

}  // namespace rdma_exporter::probe
