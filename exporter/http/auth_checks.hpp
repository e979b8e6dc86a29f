#pragma once

#include <boost/asio/ip/address.hpp>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace rdma_exporter {

// The places in the queue of bcrypt checks (exporter/http/auth.hpp): a check
// holds one from the moment it is queued until it has run, at most
// `per_source` for one source group (an IPv4 address or an IPv6 /64:
// source_group(), common/address.hpp) and `total` in all. A request that
// finds no place is not queued: it is answered 401 at once. So a flood of
// wrong passwords waits for at most `total` checks, and one source cannot
// take every place. Thread-safe: places are taken on the event loop and
// given back on the thread that ran the check.
class AuthChecks {
 public:
  static constexpr int kPerSource = 2;
  static constexpr int kTotal = 16;

  // A check's place, given back exactly once: when it is destroyed or
  // assigned over. Move-only; a moved-from place holds nothing.
  class Place {
   public:
    Place() = default;
    Place(Place&& other) noexcept;
    Place& operator=(Place&& other) noexcept;
    Place(const Place&) = delete;
    Place& operator=(const Place&) = delete;
    ~Place() { release(); }

    bool held() const { return checks_ != nullptr; }

   private:
    friend class AuthChecks;
    Place(AuthChecks* checks, std::string group) : checks_(checks), group_(std::move(group)) {}
    void release();

    AuthChecks* checks_ = nullptr;  // null: holds nothing
    std::string group_;
  };

  explicit AuthChecks(int per_source = kPerSource, int total = kTotal)
      : per_source_(per_source), total_(total) {}
  AuthChecks(const AuthChecks&) = delete;
  AuthChecks& operator=(const AuthChecks&) = delete;

  // A place for a check of a request from `source`; nullopt when its group
  // holds `per_source` or all hold `total`.
  std::optional<Place> take(const boost::asio::ip::address& source);

  // Places held, in all and by the group of `source`.
  int held() const;
  int held(const boost::asio::ip::address& source) const;

 private:
  void give_back(const std::string& group);

  const int per_source_;
  const int total_;
  mutable std::mutex mutex_;
  std::map<std::string, int> by_group_;
  int held_ = 0;
};

}  // namespace rdma_exporter
