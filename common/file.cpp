#include "common/file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace rdma_exporter {

Result<std::string> read_file(const std::string& path, std::size_t max_bytes,
                              const std::string& what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error::system(errno, what);
  std::string text;
  int err = 0;
  // One byte more than allowed tells a file at the limit from a larger one.
  char buf[65536];
  for (;;) {
    const std::size_t want = std::min(sizeof buf, max_bytes + 1 - text.size());
    const ssize_t n = ::read(fd, buf, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      err = errno;
      break;
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > max_bytes) {
      ::close(fd);
      return Error{EFBIG, what + ": more than " + std::to_string(max_bytes) + " bytes"};
    }
  }
  ::close(fd);
  if (err != 0) return Error::system(err, what);
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
