#include "exporter/http/auth_checks.hpp"

#include <utility>

#include "common/address.hpp"

namespace rdma_exporter {

AuthChecks::Place::Place(Place&& other) noexcept
    : checks_(std::exchange(other.checks_, nullptr)), group_(std::move(other.group_)) {}

AuthChecks::Place& AuthChecks::Place::operator=(Place&& other) noexcept {
  if (this != &other) {
    release();
    checks_ = std::exchange(other.checks_, nullptr);
    group_ = std::move(other.group_);
  }
  return *this;
}

void AuthChecks::Place::release() {
  if (checks_ == nullptr) return;
  std::exchange(checks_, nullptr)->give_back(group_);
}

std::optional<AuthChecks::Place> AuthChecks::take(const boost::asio::ip::address& source) {
  std::string group = source_group(source);
  const std::lock_guard lock(mutex_);
  if (held_ >= total_) return std::nullopt;
  int& of_group = by_group_[group];
  if (of_group >= per_source_) return std::nullopt;
  ++of_group;
  ++held_;
  return Place(this, std::move(group));
}

void AuthChecks::give_back(const std::string& group) {
  const std::lock_guard lock(mutex_);
  --held_;
  if (auto it = by_group_.find(group); it != by_group_.end() && --it->second <= 0) {
    by_group_.erase(it);
  }
}

int AuthChecks::held() const {
  const std::lock_guard lock(mutex_);
  return held_;
}

int AuthChecks::held(const boost::asio::ip::address& source) const {
  const std::string group = source_group(source);
  const std::lock_guard lock(mutex_);
  const auto it = by_group_.find(group);
  return it == by_group_.end() ? 0 : it->second;
}

}  // namespace rdma_exporter
