#include "common/file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

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

}  // namespace rdma_exporter
