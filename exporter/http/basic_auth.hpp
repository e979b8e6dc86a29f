#pragma once

#include <array>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace rdma_exporter {

struct Credentials {
  std::string user;
  std::string password;
};

// The user and password of an "Authorization: Basic ..." header value;
// nullopt when it is not Basic, not base64 or has no ':'.
std::optional<Credentials> parse_basic_authorization(std::string_view header);

// Whether `password` hashes to `hash` (bcrypt, through libcrypt's crypt_r),
// compared in constant time. Slow on purpose: tens of milliseconds at cost 10.
bool bcrypt_matches(const std::string& password, const std::string& hash);

// Basic auth against bcrypt hashes, in the manner of exporter-toolkit:
// successful checks are remembered (by a SHA-256 of user, hash and password,
// never the password itself) so a scraper that sends the same credentials
// every 15 s pays for bcrypt once. The memory holds at most `cache_size`
// entries; the oldest goes first. Thread-safe.
class BasicAuth {
 public:
  // Whether a password matches a hash: bcrypt_matches, or a stand-in in tests.
  using Matcher = std::function<bool(const std::string& password, const std::string& hash)>;

  explicit BasicAuth(std::map<std::string, std::string> users, std::size_t cache_size = 256,
                     Matcher matches = bcrypt_matches);

  // Answered from memory: true only for credentials verified before.
  bool known_good(const Credentials& c) const;

  // The slow check, which remembers a success. An unknown user costs as
  // much as a known one, so timing does not tell which users exist.
  bool verify(const Credentials& c);

  std::size_t user_count() const { return users_.size(); }

 private:
  using Key = std::array<unsigned char, 32>;
  Key key_of(const Credentials& c, const std::string& hash) const;

  std::map<std::string, std::string> users_;
  std::size_t cache_size_;
  Matcher matches_;
  mutable std::mutex mutex_;
  std::set<Key> good_;
  std::deque<Key> order_;  // insertion order, for eviction
};

}  // namespace rdma_exporter
