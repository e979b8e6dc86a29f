#include "exporter/http/basic_auth.hpp"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cctype>
#include <memory>
#include <utility>

namespace rdma_exporter {
namespace {

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Strict standard base64 with padding; nullopt on anything else.
std::optional<std::string> base64_decode(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (std::size_t i = 0; i < in.size(); i += 4) {
    const bool last = i + 4 == in.size();
    int v[4];
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      const char c = in[i + j];
      if (c == '=' && last && j >= 2) {
        v[j] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return std::nullopt;  // data after padding
      v[j] = base64_value(c);
      if (v[j] < 0) return std::nullopt;
    }
    const unsigned n = (static_cast<unsigned>(v[0]) << 18) | (static_cast<unsigned>(v[1]) << 12) |
                       (static_cast<unsigned>(v[2]) << 6) | static_cast<unsigned>(v[3]);
    out.push_back(static_cast<char>((n >> 16) & 0xff));
    if (pad < 2) out.push_back(static_cast<char>((n >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(n & 0xff));
  }
  return out;
}

}  // namespace

std::optional<Credentials> parse_basic_authorization(std::string_view header) {
  while (!header.empty() && header.front() == ' ') header.remove_prefix(1);
  while (!header.empty() && header.back() == ' ') header.remove_suffix(1);
  constexpr std::string_view kScheme = "basic";
  if (header.size() <= kScheme.size() || header[kScheme.size()] != ' ') return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return std::nullopt;
  }
  std::string_view token = header.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  auto decoded = base64_decode(token);
  if (!decoded) return std::nullopt;
  const auto colon = decoded->find(':');
  if (colon == std::string::npos) return std::nullopt;
  return Credentials{decoded->substr(0, colon), decoded->substr(colon + 1)};
}

bool bcrypt_matches(const std::string& password, const std::string& hash) {
  // crypt_data is about 32 KiB: on the heap, not the stack.
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_r(password.c_str(), hash.c_str(), data.get());
  // libxcrypt answers a failure token starting with '*' (or null) for a
  // setting it cannot use.
  if (out == nullptr || out[0] == '*') return false;
  const std::string_view result(out);
  const bool same =
      result.size() == hash.size() && CRYPTO_memcmp(result.data(), hash.data(), hash.size()) == 0;
  OPENSSL_cleanse(data.get(), sizeof(crypt_data));
  return same;
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users, std::size_t cache_size,
                     Matcher matches)
    : users_(std::move(users)), cache_size_(cache_size), matches_(std::move(matches)) {}

BasicAuth::Key BasicAuth::key_of(const Credentials& c, const std::string& hash) const {
  Key key{};
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned int len = 0;
  const unsigned char zero = 0;
  // Lengths are implied by the separators: a user name holds no ':', and
  // the hash has a fixed shape.
  const bool ok = ctx != nullptr && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1 &&
                  EVP_DigestUpdate(ctx, c.user.data(), c.user.size()) == 1 &&
                  EVP_DigestUpdate(ctx, &zero, 1) == 1 &&
                  EVP_DigestUpdate(ctx, hash.data(), hash.size()) == 1 &&
                  EVP_DigestUpdate(ctx, &zero, 1) == 1 &&
                  EVP_DigestUpdate(ctx, c.password.data(), c.password.size()) == 1 &&
                  EVP_DigestFinal_ex(ctx, key.data(), &len) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok) key.fill(0);  // an all-zero key is never stored (see verify)
  return key;
}

bool BasicAuth::known_good(const Credentials& c) const {
  auto it = users_.find(c.user);
  if (it == users_.end()) return false;
  const Key key = key_of(c, it->second);
  if (key == Key{}) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  return good_.count(key) != 0;
}

bool BasicAuth::verify(const Credentials& c) {
  if (users_.empty()) return false;
  auto it = users_.find(c.user);
  if (it == users_.end()) {
    // The same work as for a real user, with a result that is never used.
    (void)matches_(c.password, users_.begin()->second);
    return false;
  }
  if (!matches_(c.password, it->second)) return false;
  const Key key = key_of(c, it->second);
  if (key == Key{} || cache_size_ == 0) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  if (good_.insert(key).second) {
    order_.push_back(key);
    while (order_.size() > cache_size_) {
      good_.erase(order_.front());
      order_.pop_front();
    }
  }
  return true;
}

}  // namespace rdma_exporter
