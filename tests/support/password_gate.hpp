#pragma once

// A stand-in for bcrypt in BasicAuth (BasicAuth::Matcher) that a test can
// hold: while it is closed, every check that begins waits in it, so the test
// knows which checks are running and which are queued behind them.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>

#include "exporter/http/basic_auth.hpp"

namespace rdma_exporter::testing {

class PasswordGate {
 public:
  // Checks match `password` alone, whatever the hash.
  explicit PasswordGate(std::string password) : password_(std::move(password)) {}

  BasicAuth::Matcher matcher() {
    return [this](const std::string& password, const std::string&) { return check(password); };
  }

  void close() {
    const std::lock_guard lock(mutex_);
    open_ = false;
  }
  void open() {
    const std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  // Until `n` checks have begun in all; false after 5 s.
  bool wait_for_checks(int n) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(5), [&] { return checks_ >= n; });
  }
  int checks() {
    const std::lock_guard lock(mutex_);
    return checks_;
  }

 private:
  bool check(const std::string& password) {
    std::unique_lock lock(mutex_);
    ++checks_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_; });
    return password == password_;
  }

  const std::string password_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = true;
  int checks_ = 0;
};

// Opens the gate when it goes out of scope: a check held in it would keep
// the server's verifier thread from ending. Declare it after the server.
class OpenAtExit {
 public:
  explicit OpenAtExit(PasswordGate& gate) : gate_(gate) {}
  OpenAtExit(const OpenAtExit&) = delete;
  OpenAtExit& operator=(const OpenAtExit&) = delete;
  ~OpenAtExit() { gate_.open(); }

 private:
  PasswordGate& gate_;
};

}  // namespace rdma_exporter::testing
