#include "collectors/probe/auth.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <fstream>
#include <stdexcept>

#include "common/file.hpp"

namespace rdma_exporter::probe {
namespace {
constexpr std::size_t kMaxSecretBytes = 4096;
}  // namespace

Nonce random_nonce() {
  Nonce n{};
  if (RAND_bytes(n.data(), static_cast<int>(n.size())) != 1) {
    throw std::runtime_error("no randomness for a probe nonce");
  }
  return n;
}

namespace {
Mac mac_of(const std::string& secret, const Nonce& nonce, const std::vector<uint8_t>& fields) {
  std::vector<uint8_t> input(nonce.begin(), nonce.end());
  input.insert(input.end(), fields.begin(), fields.end());
  Mac mac{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), input.data(), input.size(),
       mac.data(), &len);
  return mac;
}
}  // namespace

Mac setup_mac(const std::string& secret, const Nonce& nonce, const wire::Setup& setup) {
  return mac_of(secret, nonce, wire::setup_mac_input(setup));
}

Mac setup_mac(const std::string& secret, const Nonce& nonce, const wire::UdSetup& setup) {
  return mac_of(secret, nonce, wire::setup_mac_input(setup));
}

bool setup_mac_valid(const std::string& secret, const Nonce& nonce, const wire::Setup& setup) {
  const Mac want = setup_mac(secret, nonce, setup);
  return CRYPTO_memcmp(want.data(), setup.mac.data(), want.size()) == 0;
}

bool setup_mac_valid(const std::string& secret, const Nonce& nonce, const wire::UdSetup& setup) {
  const Mac want = setup_mac(secret, nonce, setup);
  return CRYPTO_memcmp(want.data(), setup.mac.data(), want.size()) == 0;
}

Result<std::string> read_secret_file(const std::string& path) {
  auto text = read_file(path, kMaxSecretBytes, "probe.secret_file " + path);
  if (!text) return text.error();
  std::string secret = std::move(text).value();
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.size() < 16) {
    return Error{EINVAL, "probe.secret_file " + path + ": the secret must have at least 16 bytes"};
  }
  return secret;
}

}  // namespace rdma_exporter::probe
