#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/metric_sink.hpp"
#include "common/result.hpp"

namespace rdma_exporter {

// The fields of /proc/<pid>/stat (proc(5)) the process metrics use.
struct ProcStat {
  uint64_t utime_ticks = 0;      // field 14, clock ticks in user mode
  uint64_t stime_ticks = 0;      // field 15, clock ticks in kernel mode
  uint64_t num_threads = 0;      // field 20
  uint64_t starttime_ticks = 0;  // field 22, clock ticks after boot
  uint64_t vsize_bytes = 0;      // field 23
  uint64_t rss_pages = 0;        // field 24
};

// Parses a /proc/<pid>/stat line. The command name (field 2) is in
// parentheses and may itself hold spaces and parentheses, so the fields are
// counted from the last ')'.
Result<ProcStat> parse_proc_stat(std::string_view text);

// The boot time (the `btime` line of /proc/stat), in seconds since the epoch.
Result<uint64_t> parse_boot_time(std::string_view text);

// When this process started, in nanoseconds since the Unix epoch: the boot
// time (`btime` of <proc_root>/stat) plus the start time in clock ticks after
// boot (<proc_root>/self/stat field 22). The one clock for the start of the
// process: process_start_time_seconds and the OTLP start time of every
// cumulative series come from here, so they agree. `ticks_per_second` as
// sysconf(_SC_CLK_TCK) gives it when 0.
Result<uint64_t> process_start_time_unix_nano(const std::string& proc_root = "/proc",
                                              long ticks_per_second = 0);

// The soft limit of one row of /proc/<pid>/limits ("Max open files"):
// nullopt when it reads "unlimited".
Result<std::optional<uint64_t>> parse_soft_limit(std::string_view text, std::string_view row);

// Whether a kernel of this release (uname -r, "6.8.0-45-generic") gives the
// number of a process's open descriptors as the st_size of /proc/<pid>/fd:
// Linux 6.2 and later; earlier kernels give 0 there. False for a release it
// cannot read.
bool fd_dir_size_counts_fds(std::string_view release);

// The exporter process's own metrics as the Prometheus client libraries
// define them (process_cpu_seconds_total, process_resident_memory_bytes,
// ...), read from <proc_root>/self/{stat,limits,fd} and <proc_root>/stat.
// The open descriptors are counted by one stat() of <proc_root>/self/fd where
// the kernel counts them in its size (procfs, Linux 6.2 and later), by
// listing the directory elsewhere.
// A file that cannot be read or parsed leaves its metrics out and is
// reported; nothing here throws. Used from one thread at a time.
class ProcessMetrics {
 public:
  // `ticks_per_second` and `page_size` as sysconf() gives them when 0.
  explicit ProcessMetrics(std::string proc_root = "/proc", long ticks_per_second = 0,
                          long page_size = 0);

  // Adds the metrics that could be read; one line per problem.
  std::vector<std::string> collect(MetricSink& sink);

  // collect(), with its problems logged when they change (a warning when
  // they appear, an info line when they are gone).
  void add_metrics(MetricSink& sink);

 private:
  // The steps of collect(): /proc/self/stat read and parsed; the CPU time
  // and memory from it; a soft limit from /proc/self/limits (unlimited as
  // RLIM_INFINITY); the open descriptors.
  std::optional<ProcStat> read_stat(std::vector<std::string>& errors) const;
  void add_usage(MetricSink& sink, const ProcStat& stat) const;
  static std::optional<double> soft_limit(const Result<std::string>& limits,
                                          const std::string& limits_path, std::string_view row,
                                          std::vector<std::string>& errors);
  std::optional<double> open_fds(std::vector<std::string>& errors);

  std::string root_;
  double ticks_per_second_;
  double page_size_;
  long ticks_;
  // Whether <root>/self/fd is procfs's on a kernel that counts the open
  // descriptors in its st_size; decided at the first collection.
  std::optional<bool> fd_size_counts_;
  std::optional<double> start_time_;  // constant for the process: read once
  std::vector<std::string> last_errors_;
};

}  // namespace rdma_exporter
