#include "common/file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>

namespace rdma_exporter {
namespace {

// What a file that is not a regular file is, for the error.
const char* file_kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Why the file open on `fd` is not read: not a regular file, or larger than
// `max_bytes`; empty when it is read.
std::optional<Error> refusal(int fd, std::size_t max_bytes, const std::string& what) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Error::system(errno, what);
  if (!S_ISREG(st.st_mode)) {
    return Error{EINVAL, what + ": is " + file_kind(st.st_mode) + ", not a regular file"};
  }
  if (static_cast<std::uintmax_t>(st.st_size) > max_bytes) {
    return Error{EFBIG, what + ": is " + std::to_string(st.st_size) + " bytes, more than " +
                            std::to_string(max_bytes) + " bytes"};
  }
  return std::nullopt;
}

// Up to `max_bytes` and one more of `fd`, which tells a file at the limit
// from a larger one (a file that grew, a kernel file that says size 0).
Result<std::string> read_bounded(int fd, std::size_t max_bytes, const std::string& what) {
  std::string text;
  std::array<char, 65536> buf;
  for (;;) {
    const std::size_t want = std::min(buf.size(), max_bytes + 1 - text.size());
    const ssize_t n = ::read(fd, buf.data(), want);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::system(errno, what);
    }
    if (n == 0) return text;
    text.append(buf.data(), static_cast<std::size_t>(n));
    if (text.size() > max_bytes) {
      return Error{EFBIG, what + ": more than " + std::to_string(max_bytes) + " bytes"};
    }
  }
}

}  // namespace

Result<std::string> read_file(const std::string& path, std::size_t max_bytes,
                              const std::string& what) {
  // Never waits in open(): a FIFO without a writer, a device or a terminal
  // is opened at once (and never becomes the controlling terminal), then
  // refused.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return Error::system(errno, what);
  std::optional<Error> refused = refusal(fd, max_bytes, what);
  Result<std::string> text =
      refused ? Result<std::string>(*refused) : read_bounded(fd, max_bytes, what);
  ::close(fd);
  return text;
}

Status write_file_atomically(const std::string& path, std::string_view data) {
  std::string tmp = path + ".tmpXXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) return Error::system(errno, "create a temporary file next to " + path);
  // Takes errno before close() and unlink() can change it.
  auto fail = [&](const std::string& what) -> Status {
    Error error = Error::system(errno, what + " " + tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return error;
  };
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0) return fail("chmod");
  if (::fsync(fd) != 0) return fail("fsync");
  if (::close(fd) != 0) {
    Error error = Error::system(errno, "close " + tmp);
    ::unlink(tmp.c_str());
    return error;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Error error = Error::system(errno, "rename " + tmp + " to " + path);
    ::unlink(tmp.c_str());
    return error;
  }
  return ok_status();
}

}  // namespace rdma_exporter
