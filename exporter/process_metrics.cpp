#include "exporter/process_metrics.hpp"

#include <dirent.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <limits>

#include "common/file.hpp"
#include "common/log.hpp"

namespace rdma_exporter {
namespace {

// /proc/stat holds a line per CPU and one with a count per interrupt: large
// on big machines, never this large.
constexpr std::size_t kMaxProcFileBytes = 16u << 20;

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::vector<std::string_view> split_fields(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    const std::size_t begin = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    if (i > begin) out.push_back(text.substr(begin, i - begin));
  }
  return out;
}

bool to_u64(std::string_view s, uint64_t& out) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

std::string quoted(std::string_view s) {
  constexpr std::size_t kMax = 40;
  std::string out = "\"" + std::string(s.substr(0, kMax));
  if (s.size() > kMax) out += "...";
  return out + "\"";
}

// The number at the front of `s`, which is removed; nullopt when there is none.
std::optional<uint64_t> leading_number(std::string_view& s) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  s.remove_prefix(static_cast<std::size_t>(end - s.data()));
  return value;
}

// Counts the entries of the fd directory but the descriptor that lists it.
Result<double> list_fd_dir(const std::string& fd_path) {
  DIR* dir = ::opendir(fd_path.c_str());
  if (dir == nullptr) return Error::system(errno, fd_path);
  const std::string own = std::to_string(::dirfd(dir));
  double open = 0;
  errno = 0;
  // readdir is safe on a stream no other thread uses.
  while (const dirent* entry = ::readdir(dir)) {  // NOLINT(concurrency-mt-unsafe)
    const std::string_view name = entry->d_name;
    if (name != "." && name != ".." && name != own) ++open;
  }
  const int err = errno;
  ::closedir(dir);
  if (err != 0) return Error::system(err, fd_path);
  return open;
}

}  // namespace

bool fd_dir_size_counts_fds(std::string_view release) {
  const auto major = leading_number(release);
  if (!major || release.empty() || release.front() != '.') return false;
  release.remove_prefix(1);
  const auto minor = leading_number(release);
  if (!minor) return false;
  return *major > 6 || (*major == 6 && *minor >= 2);
}

Result<ProcStat> parse_proc_stat(std::string_view text) {
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return Error{EINVAL, "no command name in parentheses"};
  }
  // Field 3 (state) is the first after the command name.
  const auto fields = split_fields(text.substr(close + 1));
  constexpr std::size_t kFirst = 3;
  auto field = [&](std::size_t n, uint64_t& out) -> Status {
    if (n - kFirst >= fields.size()) {
      return Error{EINVAL, std::to_string(fields.size() + kFirst - 1) +
                               " fields, expected at least " + std::to_string(n)};
    }
    if (!to_u64(fields[n - kFirst], out)) {
      return Error{EINVAL, "field " + std::to_string(n) + ": expected an unsigned integer, got " +
                               quoted(fields[n - kFirst])};
    }
    return ok_status();
  };
  ProcStat s;
  for (const auto& [n, out] : {std::pair<std::size_t, uint64_t*>{14, &s.utime_ticks},
                               {15, &s.stime_ticks},
                               {20, &s.num_threads},
                               {22, &s.starttime_ticks},
                               {23, &s.vsize_bytes},
                               {24, &s.rss_pages}}) {
    if (Status st = field(n, *out); !st) return st.error();
  }
  return s;
}

Result<uint64_t> parse_boot_time(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const auto fields = split_fields(text.substr(pos, end - pos));
    if (!fields.empty() && fields[0] == "btime") {
      uint64_t value = 0;
      if (fields.size() != 2 || !to_u64(fields[1], value)) {
        return Error{EINVAL, "btime: expected one unsigned integer"};
      }
      return value;
    }
    pos = end + 1;
  }
  return Error{EINVAL, "no btime line"};
}

Result<uint64_t> process_start_time_unix_nano(const std::string& proc_root, long ticks_per_second) {
  if (ticks_per_second <= 0) ticks_per_second = ::sysconf(_SC_CLK_TCK);
  if (ticks_per_second <= 0) ticks_per_second = 100;  // USER_HZ wherever sysconf fails
  const std::string stat_path = proc_root + "/self/stat";
  auto stat_text = read_file(stat_path, kMaxProcFileBytes, stat_path);
  if (!stat_text) return stat_text.error();
  auto stat = parse_proc_stat(*stat_text);
  if (!stat) return Error{EINVAL, stat_path + ": " + stat.error().message};
  const std::string boot_path = proc_root + "/stat";
  auto boot_text = read_file(boot_path, kMaxProcFileBytes, boot_path);
  if (!boot_text) return boot_text.error();
  auto boot = parse_boot_time(*boot_text);
  if (!boot) return Error{EINVAL, boot_path + ": " + boot.error().message};
  constexpr uint64_t kNano = 1'000'000'000ULL;
  const auto hz = static_cast<uint64_t>(ticks_per_second);
  const uint64_t ticks = stat->starttime_ticks;
  return *boot * kNano + (ticks / hz) * kNano + (ticks % hz) * kNano / hz;
}

Result<std::optional<uint64_t>> parse_soft_limit(std::string_view text, std::string_view row) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    // The name is followed by at least one space ("Max open files  1024").
    if (!line.starts_with(row) || line.size() == row.size() || !is_space(line[row.size()])) {
      continue;
    }
    const auto fields = split_fields(line.substr(row.size()));
    if (fields.empty()) return Error{EINVAL, std::string(row) + ": no soft limit"};
    if (fields[0] == "unlimited") return std::optional<uint64_t>();
    uint64_t value = 0;
    if (!to_u64(fields[0], value)) {
      return Error{EINVAL, std::string(row) + ": expected a number or \"unlimited\", got " +
                               quoted(fields[0])};
    }
    return std::optional<uint64_t>(value);
  }
  return Error{EINVAL, "no \"" + std::string(row) + "\" line"};
}

ProcessMetrics::ProcessMetrics(std::string proc_root, long ticks_per_second, long page_size)
    : root_(std::move(proc_root)), ticks_(ticks_per_second) {
  if (ticks_per_second <= 0) ticks_per_second = ::sysconf(_SC_CLK_TCK);
  if (page_size <= 0) page_size = ::sysconf(_SC_PAGESIZE);
  // USER_HZ and the page size are 100 and 4096 wherever sysconf could fail.
  ticks_per_second_ = ticks_per_second > 0 ? static_cast<double>(ticks_per_second) : 100.0;
  page_size_ = page_size > 0 ? static_cast<double>(page_size) : 4096.0;
}

std::optional<ProcStat> ProcessMetrics::read_stat(std::vector<std::string>& errors) const {
  const std::string stat_path = root_ + "/self/stat";
  auto stat_text = read_file(stat_path, kMaxProcFileBytes, stat_path);
  std::optional<ProcStat> stat;
  if (!stat_text) {
    errors.push_back(stat_text.error().message);
  } else if (auto parsed = parse_proc_stat(*stat_text); !parsed) {
    errors.push_back(stat_path + ": " + parsed.error().message);
  } else {
    stat = *parsed;
  }
  return stat;
}

void ProcessMetrics::add_usage(MetricSink& sink, const ProcStat& stat) const {
  sink.counter("process_cpu_seconds_total",
               "CPU time the exporter process has used, user and system, in seconds.", {},
               static_cast<double>(stat.utime_ticks + stat.stime_ticks) / ticks_per_second_);
  sink.gauge("process_resident_memory_bytes",
             "Resident set size of the exporter process, in bytes.", {},
             static_cast<double>(stat.rss_pages) * page_size_);
  sink.gauge("process_virtual_memory_bytes",
             "Virtual memory size of the exporter process, in bytes.", {},
             static_cast<double>(stat.vsize_bytes));
}

std::optional<double> ProcessMetrics::soft_limit(const Result<std::string>& limits,
                                                 const std::string& limits_path,
                                                 std::string_view row,
                                                 std::vector<std::string>& errors) {
  if (!limits) return std::nullopt;
  auto value = parse_soft_limit(*limits, row);
  if (!value) {
    errors.push_back(limits_path + ": " + value.error().message);
    return std::nullopt;
  }
  // Unlimited is RLIM_INFINITY, as getrlimit() gives it.
  return static_cast<double>(value->value_or(std::numeric_limits<uint64_t>::max()));
}

std::optional<double> ProcessMetrics::open_fds(std::vector<std::string>& errors) {
  const std::string fd_path = root_ + "/self/fd";
  if (!fd_size_counts_) {
    struct statfs fs {};
    utsname u{};
    fd_size_counts_ = ::statfs(fd_path.c_str(), &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC &&
                      ::uname(&u) == 0 && fd_dir_size_counts_fds(u.release);
  }
  // One stat() instead of a listing of every descriptor. A size of 0 (a
  // kernel that does not count there after all) falls back to the listing.
  std::optional<double> open;
  if (*fd_size_counts_) {
    struct stat st {};
    if (::stat(fd_path.c_str(), &st) == 0 && st.st_size > 0) {
      open = static_cast<double>(st.st_size);
    }
  }
  if (!open) {
    if (auto listed = list_fd_dir(fd_path); !listed) {
      errors.push_back(listed.error().message);
    } else {
      open = *listed;
    }
  }
  return open;
}

std::vector<std::string> ProcessMetrics::collect(MetricSink& sink) {
  std::vector<std::string> errors;
  const std::optional<ProcStat> stat = read_stat(errors);
  if (stat) add_usage(sink, *stat);

  const std::string limits_path = root_ + "/self/limits";
  auto limits = read_file(limits_path, kMaxProcFileBytes, limits_path);
  if (!limits) errors.push_back(limits.error().message);
  if (auto max = soft_limit(limits, limits_path, "Max address space", errors)) {
    sink.gauge("process_virtual_memory_max_bytes",
               "Soft limit of the exporter process's virtual memory size (RLIMIT_AS), in bytes; "
               "1.8446744073709552e+19 (RLIM_INFINITY) when unlimited.",
               {}, *max);
  }
  if (auto open = open_fds(errors)) {
    sink.gauge("process_open_fds", "File descriptors the exporter process has open.", {}, *open);
  }
  if (auto max = soft_limit(limits, limits_path, "Max open files", errors)) {
    sink.gauge("process_max_fds",
               "Soft limit of the exporter process's open file descriptors (RLIMIT_NOFILE).", {},
               *max);
  }

  if (!start_time_ && stat) {
    if (auto ns = process_start_time_unix_nano(root_, ticks_); !ns) {
      errors.push_back(ns.error().message);
    } else {
      start_time_ = static_cast<double>(*ns) / 1e9;
    }
  }
  if (start_time_) {
    sink.gauge("process_start_time_seconds",
               "When the exporter process started, in seconds since the epoch.", {}, *start_time_);
  }
  if (stat) {
    sink.gauge("process_threads", "Threads in the exporter process.", {},
               static_cast<double>(stat->num_threads));
  }
  return errors;
}

void ProcessMetrics::add_metrics(MetricSink& sink) {
  auto errors = collect(sink);
  if (errors == last_errors_) return;
  if (errors.empty()) {
    log::info("process metrics recovered");
  } else {
    std::string msg = "process metrics: " + errors.front();
    if (errors.size() > 1) msg += " (and " + std::to_string(errors.size() - 1) + " more)";
    log::warn(msg);
  }
  last_errors_ = std::move(errors);
}

}  // namespace rdma_exporter
