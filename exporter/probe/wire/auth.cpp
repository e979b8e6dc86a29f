#include "exporter/probe/wire/auth.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "common/file.hpp"

namespace rdma_exporter::probe {
namespace {
constexpr std::size_t kMaxSecretBytes = 4096;
constexpr std::size_t kMinSecretBytes = 16;

// HMAC-SHA256 of the concatenated parts.
Mac hmac(const std::string& secret, std::initializer_list<std::span<const uint8_t>> parts) {
  std::vector<uint8_t> input;
  for (auto part : parts) input.insert(input.end(), part.begin(), part.end());
  Mac mac{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), input.data(), input.size(),
       mac.data(), &len);
  return mac;
}

std::span<const uint8_t> label(const char* text) {
  return {reinterpret_cast<const uint8_t*>(text), std::strlen(text)};
}

template <typename S>
Mac setup_mac_of(const std::string& secret, const Nonce& nonce, const S& setup) {
  return hmac(secret, {label("setup"), nonce, wire::mac_input(setup)});
}

template <typename A>
Mac accept_mac_of(const std::string& secret, const Mac& setup, const A& accept) {
  return hmac(secret, {label("accept"), setup, wire::mac_input(accept)});
}

}  // namespace

Nonce random_nonce() {
  Nonce n{};
  if (RAND_bytes(n.data(), static_cast<int>(n.size())) != 1) {
    throw std::runtime_error("no randomness for a probe nonce");
  }
  return n;
}

Mac setup_mac(const std::string& secret, const Nonce& nonce, const wire::Setup& setup) {
  return setup_mac_of(secret, nonce, setup);
}

Mac setup_mac(const std::string& secret, const Nonce& nonce, const wire::UdSetup& setup) {
  return setup_mac_of(secret, nonce, setup);
}

Mac accept_mac(const std::string& secret, const Mac& setup, const wire::Accept& accept) {
  return accept_mac_of(secret, setup, accept);
}

Mac accept_mac(const std::string& secret, const Mac& setup, const wire::UdAccept& accept) {
  return accept_mac_of(secret, setup, accept);
}

bool mac_equal(const Mac& a, const Mac& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool Keyring::rotate(std::string secret, Clock::time_point until) {
  if (secret == current_) return false;
  if (secret.empty()) {
    *this = Keyring();
    return true;
  }
  previous_ = std::move(current_);
  previous_until_ = until;
  current_ = std::move(secret);
  return true;
}

bool Keyring::accepts(const std::string& secret, Clock::time_point now) const {
  const auto in_use = secrets(now);
  return std::any_of(in_use.begin(), in_use.end(),
                     [&](const std::string* s) { return *s == secret; });
}

std::vector<const std::string*> Keyring::secrets(Clock::time_point now) const {
  std::vector<const std::string*> out;
  if (current_.empty()) return out;
  out.push_back(&current_);
  if (!previous_.empty() && now < previous_until_) out.push_back(&previous_);
  return out;
}

template <typename S>
std::optional<Keyring::Verified> Keyring::verify_any(const Nonce& nonce, const S& setup,
                                                     Clock::time_point now) const {
  for (const std::string* s : secrets(now)) {
    const Mac expected = setup_mac(*s, nonce, setup);
    for (const Mac& m : setup.macs) {
      if (mac_equal(expected, m)) return Verified{s, m};
    }
  }
  return std::nullopt;
}

std::optional<Keyring::Verified> Keyring::verify(const Nonce& nonce, const wire::Setup& setup,
                                                 Clock::time_point now) const {
  return verify_any(nonce, setup, now);
}

std::optional<Keyring::Verified> Keyring::verify(const Nonce& nonce, const wire::UdSetup& setup,
                                                 Clock::time_point now) const {
  return verify_any(nonce, setup, now);
}

Result<std::string> read_secret_file(const std::string& path) {
  const std::string what = "probe.secret_file " + path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Error::system(errno, what);
  if ((st.st_mode & (S_IRWXO | S_IWGRP)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Error{EACCES, what + ": mode " + mode +
                             " lets other users read or change the secret; make it 0600 or 0640 "
                             "(chmod o-rwx,g-w)"};
  }
  auto text = read_file(path, kMaxSecretBytes, what);
  if (!text) return text.error();
  std::string secret = std::move(text).value();
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.size() < kMinSecretBytes) {
    return Error{EINVAL, what + ": the secret must have at least 16 bytes"};
  }
  return secret;
}

}  // namespace rdma_exporter::probe
