#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

#include "common/errno_text.hpp"

namespace rdma_exporter {

// An error that crosses a module boundary: the errno it came from (0 when it
// is not a system error) and a message naming what failed.
struct Error {
  int code = 0;
  std::string message;

  // "what: errno_text(code)" for a system error.
  static Error system(int err, const std::string& what) {
    return Error{err, what + ": " + errno_text(err)};
  }
};

// Either a value or an Error, in the spirit of std::expected.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { return std::get<Error>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result of an operation that yields nothing but may fail.
struct Done {};
using Status = Result<Done>;
inline Status ok_status() {
  return Done{};
}

// How a kernel write went, as a metric label: "ok" or the errno's name
// (EPERM, EBUSY, EINVAL, EOPNOTSUPP, ENOMEM, ...; "error" for the rest).
inline std::string result_name(const Status& s) {
  if (s) return "ok";
  switch (s.error().code) {
    case EPERM:
      return "EPERM";
    case EACCES:
      return "EACCES";
    case EBUSY:
      return "EBUSY";
    case EINVAL:
      return "EINVAL";
    case EOPNOTSUPP:
      return "EOPNOTSUPP";
    case ENOMEM:
      return "ENOMEM";
    case ENOENT:
      return "ENOENT";
    case ETIMEDOUT:
      return "ETIMEDOUT";
    default:
      return "error";
  }
}

}  // namespace rdma_exporter
