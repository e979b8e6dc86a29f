#pragma once

#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "exporter/probe/wire/protocol.hpp"

// Shared-secret authentication of both ends of a probe session. The
// responder's hello carries a fresh random nonce and how many secrets it
// accepts, nothing derived from them; the prober answers with its own
// nonce, the address it dialled and HMAC-SHA256(secret, "setup" ‖ responder
// nonce ‖ set-up) for each secret it holds; the responder proves the secret
// of the MAC it verified with HMAC-SHA256(secret, "accept" ‖ that set-up MAC
// ‖ accept). The secret never crosses the wire; a set-up or an accept is
// good for one session only, and a set-up only at the address the prober
// dialled.
namespace rdma_exporter::probe {

using Nonce = std::array<uint8_t, wire::kNonceSize>;
using Mac = wire::Mac;

Nonce random_nonce();

Mac setup_mac(const std::string& secret, const Nonce& nonce, const wire::Setup& setup);
Mac setup_mac(const std::string& secret, const Nonce& nonce, const wire::UdSetup& setup);
Mac accept_mac(const std::string& secret, const Mac& setup, const wire::Accept& accept);
Mac accept_mac(const std::string& secret, const Mac& setup, const wire::UdAccept& accept);

// Constant-time comparison of two MACs.
bool mac_equal(const Mac& a, const Mac& b);

// The secrets one exporter holds: the current one and, for a grace period
// after a rotation, the previous one. Both ends of a session use the same
// keyring: a responder accepts either secret, a prober signs with each.
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
  // Whether a session set up with `secret` (none: set up without
  // authentication) may go on at `now`: its secret is in use, or it had
  // none and there is none.
  bool still_accepts(const std::optional<std::string>& secret, Clock::time_point now) const {
    return secret ? accepts(*secret, now) : empty();
  }
  // How many secrets are in use at `now` (0, 1 or 2).
  std::size_t count(Clock::time_point now) const { return secrets(now).size(); }
  // The secrets in use at `now`, the current one first.
  std::vector<const std::string*> secrets(Clock::time_point now) const;
  // A set-up's MAC that one of the secrets in use at `now` made, and that
  // secret; nothing if none did.
  struct Verified {
    const std::string* secret = nullptr;
    Mac mac{};
  };
  std::optional<Verified> verify(const Nonce& nonce, const wire::Setup& setup,
                                 Clock::time_point now) const;
  std::optional<Verified> verify(const Nonce& nonce, const wire::UdSetup& setup,
                                 Clock::time_point now) const;

 private:
  template <typename S>
  std::optional<Verified> verify_any(const Nonce& nonce, const S& setup,
                                     Clock::time_point now) const;

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
