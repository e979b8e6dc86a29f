// The exporter's process_* metrics: the /proc parsers on hand-written lines,
// and whole collections from fixture trees shaped like /proc.

#include "exporter/process_metrics.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include "tests/support/snapshot_query.hpp"

namespace rdma_exporter {
namespace {

using testing::has_family;
using testing::sample;

// proc(5) fields 1 to 52, every one with a value of its own so that a field
// read from a neighbouring column shows: pid 1234, utime 250, stime 150,
// num_threads 7, starttime 123456, vsize 104857600, rss 2560 pages; the
// others 1000 plus their field number (tty_nr, tpgid -1, rsslim unlimited).
// The command name goes between the parentheses.
std::string stat_line(const std::string& comm) {
  std::string line = "1234 (" + comm + ") S";
  for (int field = 4; field <= 52; ++field) {
    switch (field) {
      case 8:
        line += " 0";  // tty_nr: no terminal
        break;
      case 9:
        line += " -1";  // tpgid
        break;
      case 14:
        line += " 250";
        break;
      case 15:
        line += " 150";
        break;
      case 20:
        line += " 7";
        break;
      case 22:
        line += " 123456";
        break;
      case 23:
        line += " 104857600";
        break;
      case 24:
        line += " 2560";
        break;
      case 25:
        line += " 18446744073709551615";  // rsslim: RLIM_INFINITY
        break;
      default:
        line += " " + std::to_string(1000 + field);
    }
  }
  return line + "\n";
}

TEST(ProcStat, FieldsOfAPlainLine) {
  auto s = parse_proc_stat(stat_line("rdma_exporter"));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->utime_ticks, 250U);
  EXPECT_EQ(s->stime_ticks, 150U);
  EXPECT_EQ(s->num_threads, 7U);
  EXPECT_EQ(s->starttime_ticks, 123456U);
  EXPECT_EQ(s->vsize_bytes, 104857600U);
  EXPECT_EQ(s->rss_pages, 2560U);
}

TEST(ProcStat, CommandNamesWithSpacesAndParentheses) {
  // A parser that stopped at the first ')' would read "S 9 9 9 9 (" as fields.
  for (const std::string comm : {"a b", "x) (y", ") (", "x) S 9 9 9 9 (", "((", "))"}) {
    auto s = parse_proc_stat(stat_line(comm));
    ASSERT_TRUE(s) << comm << ": " << s.error().message;
    EXPECT_EQ(s->utime_ticks, 250U) << comm;
    EXPECT_EQ(s->rss_pages, 2560U) << comm;
    EXPECT_EQ(s->num_threads, 7U) << comm;
  }
}

TEST(ProcStat, MalformedLinesAreErrors) {
  EXPECT_EQ(parse_proc_stat("").error().message, "no command name in parentheses");
  EXPECT_EQ(parse_proc_stat("1234 rdma_exporter S 1").error().message,
            "no command name in parentheses");
  EXPECT_EQ(parse_proc_stat("1234 )x( S 1").error().message, "no command name in parentheses");
  // Cut after field 21 (the kernel never does, a broken file might).
  EXPECT_EQ(parse_proc_stat("1234 (x) S 1 1 1 0 -1 0 0 0 0 0 250 150 0 0 20 0 7 0").error().message,
            "21 fields, expected at least 22");
  std::string line = stat_line("x");
  line.replace(line.find(" 250 "), 5, " 2x0 ");
  EXPECT_EQ(parse_proc_stat(line).error().message,
            "field 14: expected an unsigned integer, got \"2x0\"");
  line = stat_line("x");
  line.replace(line.find(" 2560 "), 6, " -2560 ");
  EXPECT_EQ(parse_proc_stat(line).error().message,
            "field 24: expected an unsigned integer, got \"-2560\"");
}

TEST(ProcStat, BootTime) {
  EXPECT_EQ(*parse_boot_time("cpu  1 2 3\nintr 5 0 0\nctxt 99\nbtime 1764547200\nprocesses 4\n"),
            1764547200U);
  EXPECT_EQ(parse_boot_time("cpu  1 2 3\n").error().message, "no btime line");
  EXPECT_EQ(parse_boot_time("btime soon\n").error().message,
            "btime: expected one unsigned integer");
  EXPECT_EQ(parse_boot_time("btime 1 2\n").error().message, "btime: expected one unsigned integer");
}

constexpr const char* kLimits =
    "Limit                     Soft Limit           Hard Limit           Units     \n"
    "Max cpu time              unlimited            unlimited            seconds   \n"
    "Max open files            1024                 524288               files     \n"
    "Max locked memory         65536                8388608              bytes     \n"
    "Max address space         unlimited            unlimited            bytes     \n"
    "Max open files_x          7                    7                    files     \n";

TEST(FdDirSize, CountsFromLinux62On) {
  EXPECT_FALSE(fd_dir_size_counts_fds("5.15.0-91-generic"));
  EXPECT_FALSE(fd_dir_size_counts_fds("6.1.0-18-amd64"));
  EXPECT_FALSE(fd_dir_size_counts_fds("6.1"));
  EXPECT_TRUE(fd_dir_size_counts_fds("6.2"));
  EXPECT_TRUE(fd_dir_size_counts_fds("6.2.0-39-generic"));
  EXPECT_TRUE(fd_dir_size_counts_fds("6.18.44-fc-v1045"));
  EXPECT_TRUE(fd_dir_size_counts_fds("7.0.0"));
  EXPECT_TRUE(fd_dir_size_counts_fds("10.1"));
  EXPECT_FALSE(fd_dir_size_counts_fds("4.19.0"));
}

TEST(FdDirSize, UnreadableReleasesDoNotCount) {
  EXPECT_FALSE(fd_dir_size_counts_fds(""));
  EXPECT_FALSE(fd_dir_size_counts_fds("6"));
  EXPECT_FALSE(fd_dir_size_counts_fds("6."));
  EXPECT_FALSE(fd_dir_size_counts_fds("6-2"));
  EXPECT_FALSE(fd_dir_size_counts_fds("v6.2"));
  EXPECT_FALSE(fd_dir_size_counts_fds(".6.2"));
}

TEST(ProcLimits, SoftLimits) {
  EXPECT_EQ(parse_soft_limit(kLimits, "Max open files")->value(), 1024U);
  EXPECT_EQ(parse_soft_limit(kLimits, "Max locked memory")->value(), 65536U);
  EXPECT_FALSE(parse_soft_limit(kLimits, "Max address space")->has_value());
  EXPECT_EQ(parse_soft_limit(kLimits, "Max file locks").error().message,
            "no \"Max file locks\" line");
  EXPECT_EQ(
      parse_soft_limit("Max open files            many     1\n", "Max open files").error().message,
      "Max open files: expected a number or \"unlimited\", got \"many\"");
  EXPECT_EQ(parse_soft_limit("Max open files   \n", "Max open files").error().message,
            "Max open files: no soft limit");
}

// A tree shaped like /proc: self/stat, self/limits, self/fd/, stat.
class ProcessMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = ::testing::TempDir() + "rdma_proc_self_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ + "/self/fd");
    write("self/stat", stat_line("rdma_exporter"));
    write("self/limits", kLimits);
    write("stat", "cpu  10 20 30\ncpu0 10 20 30\nintr 1 2 3\nbtime 1764547200\n");
    // Numbers no descriptor of the test has, so the reader's own directory
    // descriptor cannot be one of them.
    for (const char* fd : {"50000", "50001", "50002"}) write(std::string("self/fd/") + fd, "");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  void write(const std::string& rel, const std::string& text) {
    std::ofstream(root_ + "/" + rel) << text;
  }

  Snapshot collect(ProcessMetrics& m, std::vector<std::string>& errors) {
    MetricSink sink;
    errors = m.collect(sink);
    Snapshot s;
    s.families = sink.take();
    return s;
  }

  std::string root_;
};

TEST_F(ProcessMetricsTest, EveryMetricFromAGoodTree) {
  ProcessMetrics m(root_, 100, 4096);
  std::vector<std::string> errors;
  const Snapshot s = collect(m, errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(sample(s, "process_cpu_seconds_total"), 4.0);  // (250 + 150) / 100
  EXPECT_EQ(sample(s, "process_resident_memory_bytes"), 2560.0 * 4096);
  EXPECT_EQ(sample(s, "process_virtual_memory_bytes"), 104857600.0);
  EXPECT_EQ(sample(s, "process_virtual_memory_max_bytes"), 18446744073709551615.0);
  EXPECT_EQ(sample(s, "process_open_fds"), 3.0);
  EXPECT_EQ(sample(s, "process_max_fds"), 1024.0);
  EXPECT_EQ(sample(s, "process_start_time_seconds"), 1764547200.0 + 1234.56);
  EXPECT_EQ(sample(s, "process_threads"), 7.0);
  EXPECT_EQ(s.families.front().type, prometheus::MetricType::Counter);
}

TEST_F(ProcessMetricsTest, StartTimeInNanosecondsFromBootTimeAndTicks) {
  // btime 1764547200 s + 123456 ticks at 100 Hz = 1234 s + 56 ticks.
  auto ns = process_start_time_unix_nano(root_, 100);
  ASSERT_TRUE(ns) << ns.error().message;
  EXPECT_EQ(*ns, 1'764'548'434'560'000'000ULL);
  // At 1000 Hz the same ticks are 123.456 s.
  EXPECT_EQ(process_start_time_unix_nano(root_, 1000).value(), 1'764'547'323'456'000'000ULL);
  write("stat", "cpu  1 2 3\n");
  EXPECT_EQ(process_start_time_unix_nano(root_, 100).error().message,
            root_ + "/stat: no btime line");
  write("self/stat", "1234 rdma_exporter S 1 1\n");
  EXPECT_EQ(process_start_time_unix_nano(root_, 100).error().message,
            root_ + "/self/stat: no command name in parentheses");
}

TEST_F(ProcessMetricsTest, ABrokenStatLeavesItsMetricsOutAndKeepsTheRest) {
  write("self/stat", "1234 rdma_exporter S 1 1\n");
  ProcessMetrics m(root_, 100, 4096);
  std::vector<std::string> errors;
  Snapshot s = collect(m, errors);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0], root_ + "/self/stat: no command name in parentheses");
  for (const char* name :
       {"process_cpu_seconds_total", "process_resident_memory_bytes",
        "process_virtual_memory_bytes", "process_start_time_seconds", "process_threads"}) {
    EXPECT_FALSE(has_family(s, name)) << name;
  }
  EXPECT_EQ(sample(s, "process_open_fds"), 3.0);
  EXPECT_EQ(sample(s, "process_max_fds"), 1024.0);

  // Repaired, everything is back.
  write("self/stat", stat_line("rdma_exporter"));
  s = collect(m, errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(sample(s, "process_start_time_seconds"), 1764547200.0 + 1234.56);
}

TEST_F(ProcessMetricsTest, BrokenLimitsBootTimeAndMissingFiles) {
  write("self/limits", "Max open files            lots     lots     files\n");
  write("stat", "cpu  1 2 3\n");
  ProcessMetrics m(root_, 100, 4096);
  std::vector<std::string> errors;
  Snapshot s = collect(m, errors);
  EXPECT_EQ(errors, (std::vector<std::string>{
                        root_ + "/self/limits: no \"Max address space\" line",
                        root_ + "/self/limits: Max open files: expected a number or \"unlimited\", "
                                "got \"lots\"",
                        root_ + "/stat: no btime line"}));
  EXPECT_FALSE(has_family(s, "process_max_fds"));
  EXPECT_FALSE(has_family(s, "process_virtual_memory_max_bytes"));
  EXPECT_FALSE(has_family(s, "process_start_time_seconds"));
  EXPECT_EQ(sample(s, "process_cpu_seconds_total"), 4.0);

  std::filesystem::remove_all(root_);
  s = collect(m, errors);
  EXPECT_EQ(errors, (std::vector<std::string>{root_ + "/self/stat: No such file or directory",
                                              root_ + "/self/limits: No such file or directory",
                                              root_ + "/self/fd: No such file or directory"}));
  EXPECT_TRUE(s.families.empty());
}

TEST_F(ProcessMetricsTest, TheCountLeavesOutTheDescriptorThatReadsTheDirectory) {
  // opendir() takes the lowest free descriptor: name a fixture entry after it.
  const int lowest = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(lowest, 0);
  ::close(lowest);
  write("self/fd/" + std::to_string(lowest), "");
  ProcessMetrics m(root_, 100, 4096);
  std::vector<std::string> errors;
  const Snapshot s = collect(m, errors);
  EXPECT_EQ(sample(s, "process_open_fds"), 3.0);  // of the 4 entries
}

TEST(ProcessMetrics, TheRunningProcess) {
  ProcessMetrics m;
  MetricSink sink;
  EXPECT_TRUE(m.collect(sink).empty());
  Snapshot s;
  s.families = sink.take();
  // This test's own process: a few descriptors, at least the main thread,
  // started after 2020 and not in the future.
  EXPECT_GE(sample(s, "process_open_fds"), 3.0);
  EXPECT_GE(sample(s, "process_threads"), 1.0);
  EXPECT_GT(sample(s, "process_start_time_seconds"), 1577836800.0);
  EXPECT_GT(sample(s, "process_resident_memory_bytes"), 0.0);
}

// The descriptors /proc/self/fd lists, without the one that lists them:
// counted here independently of the code under test.
double listed_fds() {
  double n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)e;
    ++n;
  }
  return n - 1;
}

TEST(ProcessMetrics, TheRunningProcessCountsEveryDescriptorItOpens) {
  ProcessMetrics m;
  auto open_fds = [&] {
    MetricSink sink;
    EXPECT_TRUE(m.collect(sink).empty());
    Snapshot s;
    s.families = sink.take();
    return sample(s, "process_open_fds");
  };
  const double before = open_fds();
  EXPECT_EQ(before, listed_fds());
  std::vector<int> fds;
  for (int i = 0; i < 5; ++i) {
    fds.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    ASSERT_GE(fds.back(), 0);
  }
  EXPECT_EQ(open_fds(), before + 5);
  EXPECT_EQ(open_fds(), listed_fds());
  for (int fd : fds) ::close(fd);
  EXPECT_EQ(open_fds(), before);
}

}  // namespace
}  // namespace rdma_exporter
