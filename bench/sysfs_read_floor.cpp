// The floor of a sysfs scrape: only reading the files a scrape reads,
// nothing else. Reads the file list (one path a line) from FILE, then passes
// over every file PASSES times and prints the CPU time (user + system) of
// one pass. MODE says how a file is read:
//
//   open   open, one read of up to 4 KiB, close (a sysfs attribute is read
//          whole): every file opened anew on every pass.
//   pread  every file opened once, before the passes (not counted), then one
//          pread of up to 4 KiB at offset 0 per file and pass: what a scrape
//          costs that keeps its files open and does nothing else.
//
// Usage: sysfs_read_floor FILE [PASSES [open|pread]]

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
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

void raise_open_file_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "Usage: sysfs_read_floor FILE [PASSES [open|pread]]\n");
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
  const long passes = argc >= 3 ? std::strtol(argv[2], nullptr, 10) : 300;
  const char* mode = argc == 4 ? argv[3] : "open";
  const bool kept = std::strcmp(mode, "pread") == 0;
  if (!kept && std::strcmp(mode, "open") != 0) {
    std::fprintf(stderr, "sysfs_read_floor: mode is open or pread, not %s\n", mode);
    return 2;
  }
  if (files.empty() || passes <= 0) {
    std::fprintf(stderr, "sysfs_read_floor: no files, or no passes\n");
    return 2;
  }
  std::size_t failed = 0;
  std::vector<int> fds;
  if (kept) {
    raise_open_file_limit();
    for (const std::string& f : files) {
      const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
      if (fd < 0) ++failed;
      fds.push_back(fd);
    }
  }
  char buf[4096];
  std::size_t bytes = 0;
  const double start = cpu_seconds();
  for (long p = 0; p < passes; ++p) {
    if (kept) {
      for (const int fd : fds) {
        if (fd < 0) continue;
        const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
        if (n > 0) bytes += static_cast<std::size_t>(n);
      }
      continue;
    }
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
  for (const int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
  std::printf("mode %s files %zu passes %ld cpu_per_pass_ms %.4f bytes_per_pass %zu failed %zu\n",
              mode, files.size(), passes, cpu * 1e3, bytes / static_cast<std::size_t>(passes),
              failed);
  return failed == 0 ? 0 : 1;
}
