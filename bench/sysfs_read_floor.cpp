// The floor of a sysfs scrape: only opening, reading and closing the files a
// scrape reads, nothing else. Reads the file list (one path a line) from
// FILE, then passes over every file PASSES times (open, one read of up to
// 4 KiB, close, as a sysfs attribute is read whole) and prints the CPU time
// (user + system) of one pass.
//
// Usage: sysfs_read_floor FILE [PASSES]

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "Usage: sysfs_read_floor FILE [PASSES]\n");
    return 2;
  }
  std::ifstream list(argv[1]);
  if (!list) {
    std::fprintf(stderr, "sysfs_read_floor: cannot read %s\n", argv[1]);
    return 1;
  }
  std::vector<std::string> files;
  for (std::string line; std::getline(list, line);) {
    if (!line.empty()) files.push_back(line);
  }
  const long passes = argc == 3 ? std::strtol(argv[2], nullptr, 10) : 300;
  if (files.empty() || passes <= 0) {
    std::fprintf(stderr, "sysfs_read_floor: no files, or no passes\n");
    return 2;
  }
  char buf[4096];
  std::size_t bytes = 0;
  std::size_t failed = 0;
  const double start = cpu_seconds();
  for (long p = 0; p < passes; ++p) {
    for (const std::string& f : files) {
      const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
      if (fd < 0) {
        ++failed;
        continue;
      }
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) bytes += static_cast<std::size_t>(n);
      ::close(fd);
    }
  }
  const double cpu = (cpu_seconds() - start) / static_cast<double>(passes);
  std::printf("files %zu passes %ld cpu_per_pass_ms %.3f bytes_per_pass %zu failed %zu\n",
              files.size(), passes, cpu * 1e3, bytes / static_cast<std::size_t>(passes), failed);
  return failed == 0 ? 0 : 1;
}
