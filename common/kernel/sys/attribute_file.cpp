#include "common/kernel/sys/attribute_file.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>

#include "common/kernel/sys/reader.hpp"

namespace rdma_exporter::sysfs {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxAttribute = 4096;
constexpr std::size_t kMaxBudget = 16384;

struct Budget {
  std::atomic<std::size_t> limit;
  std::atomic<std::size_t> held{0};
  std::atomic<std::size_t> over{0};

  Budget() : limit(default_limit()) {}

  static std::size_t default_limit() {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
    const std::size_t soft =
        rl.rlim_cur == RLIM_INFINITY ? kMaxBudget * 2 : static_cast<std::size_t>(rl.rlim_cur);
    const std::size_t reserve = std::max<std::size_t>(256, soft / 4);
    return soft > reserve ? std::min(kMaxBudget, soft - reserve) : 0;
  }

  bool acquire() {
    std::size_t now = held.load(std::memory_order_relaxed);
    while (now < limit.load(std::memory_order_relaxed)) {
      if (held.compare_exchange_weak(now, now + 1, std::memory_order_relaxed)) return true;
    }
    return false;
  }
  void release() { held.fetch_sub(1, std::memory_order_relaxed); }
};

Budget& budget() {
  static Budget b;
  return b;
}

// Reads one value from `fd`: at offset 0 with pread when `positional`
// (a held file), with read otherwise (a file just opened, or not seekable).
// A sysfs attribute hands over its whole value in one read; a short read is
// the end, which saves a second system call per file.
Result<std::string> read_value(int fd, bool positional, const fs::path& file) {
  // Not cleared: only the bytes read are used (clearing 4 KiB per file
  // cost more than the pread itself).
  std::array<char, kMaxAttribute> buf;
  std::size_t used = 0;
  while (used < buf.size()) {
    const ssize_t n =
        positional ? ::pread(fd, buf.data() + used, buf.size() - used, static_cast<off_t>(used))
                   : ::read(fd, buf.data() + used, buf.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::system(errno, "read " + file.string());
    }
    used += static_cast<std::size_t>(n);
    if (n == 0 || used < buf.size()) break;
  }
  std::size_t end = used;
  while (end > 0 && (buf[end - 1] == '\n' || buf[end - 1] == ' ' || buf[end - 1] == '\0')) --end;
  return std::string(buf.data(), end);
}

int open_attribute(const fs::path& file) {
  return ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
}

}  // namespace

Result<std::string> read_attribute(const fs::path& file) {
  const int fd = open_attribute(file);
  if (fd < 0) return Error::system(errno, "open " + file.string());
  auto value = read_value(fd, false, file);
  ::close(fd);
  return value;
}

AttributeFile::~AttributeFile() {
  close_held();
  if (state_ == State::over_budget) budget().over.fetch_sub(1, std::memory_order_relaxed);
}

AttributeFile::AttributeFile(AttributeFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), state_(other.state_) {
  other.fd_ = -1;
  other.state_ = State::unopened;
}

AttributeFile& AttributeFile::operator=(AttributeFile&& other) noexcept {
  if (this != &other) {
    close_held();
    if (state_ == State::over_budget) budget().over.fetch_sub(1, std::memory_order_relaxed);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    state_ = other.state_;
    other.fd_ = -1;
    other.state_ = State::unopened;
  }
  return *this;
}

void AttributeFile::close_held() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  budget().release();
}

Result<std::string> AttributeFile::read() {
  switch (state_) {
    case State::held:
      return read_value(fd_, true, path_);
    case State::absent:
      return Error::system(ENOENT, "open " + path_.string());
    case State::uncacheable:
      return read_attribute(path_);
    case State::unopened:
    case State::over_budget:
      break;
  }
  if (!budget().acquire()) {
    if (state_ == State::unopened) {
      state_ = State::over_budget;
      budget().over.fetch_add(1, std::memory_order_relaxed);
    }
    return read_attribute(path_);
  }
  const int fd = open_attribute(path_);
  if (fd < 0) {
    const int err = errno;
    budget().release();
    if (err == ENOENT && state_ == State::unopened) state_ = State::absent;
    return Error::system(err, "open " + path_.string());
  }
  if (state_ == State::over_budget) budget().over.fetch_sub(1, std::memory_order_relaxed);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    // A directory, a FIFO: no attribute, read the plain way every time
    // (which reports what is wrong with it).
    budget().release();
    state_ = State::uncacheable;
    auto value = read_value(fd, false, path_);
    ::close(fd);
    return value;
  }
  fd_ = fd;
  state_ = State::held;
  return read_value(fd_, true, path_);
}

std::size_t raise_open_file_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  return rl.rlim_cur == RLIM_INFINITY ? SIZE_MAX : static_cast<std::size_t>(rl.rlim_cur);
}

std::size_t open_file_budget() {
  return budget().limit.load(std::memory_order_relaxed);
}

void set_open_file_budget(std::size_t files) {
  budget().limit.store(files, std::memory_order_relaxed);
}

std::size_t open_attribute_files() {
  return budget().held.load(std::memory_order_relaxed);
}

std::size_t uncached_attribute_files() {
  return budget().over.load(std::memory_order_relaxed);
}

bool is_unavailable_errno(int err) {
  return err == EINVAL || err == EOPNOTSUPP || err == ENODATA || err == ENOSYS || err == ENXIO;
}

bool is_gone_errno(int err) {
  return err == ENODEV || err == ESTALE;
}

bool is_not_available_text(std::string_view text) {
  return text.starts_with("N/A");
}

void read_optional_text(AttributeFile& file, std::optional<std::string>& out, ReadNotes& notes,
                        bool& gone) {
  auto r = file.read();
  if (r) {
    if (is_not_available_text(*r)) {
      ++notes.unavailable;
    } else if (!r->empty()) {
      out = std::move(r).value();
    }
    return;
  }
  const int code = r.error().code;
  if (code == ENOENT) return;
  if (is_gone_errno(code)) gone = true;
  if (is_unavailable_errno(code)) {
    ++notes.unavailable;
  } else {
    notes.problems.push_back(r.error().message);
  }
}

}  // namespace rdma_exporter::sysfs
