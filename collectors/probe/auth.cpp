#include "collectors/probe/auth.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <fstream>
#include <stdexcept>

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

Mac setup_mac(const std::string& secret, const Nonce& nonce, const wire::Setup& setup) {
  std::vector<uint8_t> input(nonce.begin(), nonce.end());
  const auto fields = wire::setup_mac_input(setup);
  input.insert(input.end(), fields.begin(), fields.end());
  Mac mac{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), input.data(), input.size(),
       mac.data(), &len);
  return mac;
}

bool setup_mac_valid(const std::string& secret, const Nonce& nonce, const wire::Setup& setup) {
  const Mac want = setup_mac(secret, nonce, setup);
  return CRYPTO_memcmp(want.data(), setup.mac.data(), want.size()) == 0;
}

Result<std::string> read_secret_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::system(errno, "probe.secret_file " + path);
  // A secret is short; read one byte more than the largest one accepted.
  std::string secret(kMaxSecretBytes + 1, '\0');
  in.read(secret.data(), static_cast<std::streamsize>(secret.size()));
  secret.resize(static_cast<std::size_t>(in.gcount()));
  if (secret.size() > kMaxSecretBytes) {
    return Error{EINVAL, "probe.secret_file " + path + ": more than " +
                             std::to_string(kMaxSecretBytes) + " bytes"};
  }
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.size() < 16) {
    return Error{EINVAL, "probe.secret_file " + path + ": the secret must have at least 16 bytes"};
  }
  return secret;
}

}  // namespace rdma_exporter::probe
