// ProcessInfo: what /proc says about the pids that hold QPs, kept across
// collections while the pid stays, read again when it went away or aged.

#include "collectors/qp_counters/process_info.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

namespace rdma_exporter {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

class ProcessInfoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::path(::testing::TempDir()) /
            ("proc_info_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  void write(uint32_t pid, const std::string& file, const std::string& text) {
    const auto dir = root_ / std::to_string(pid);
    std::filesystem::create_directories(dir);
    std::ofstream(dir / file) << text;
  }

  std::filesystem::path root_;
  ProcessInfo::Clock::time_point t0_{seconds(1000)};
};

TEST_F(ProcessInfoTest, ReadsCommAndTheCgroupV2Path) {
  write(7, "comm", "trainer\n");
  write(7, "cgroup", "12:cpu,cpuacct:/v1/path\n0::/kubepods/pod-a/ctr-1\n");
  ProcessInfo p(root_);
  p.next_collection(t0_);
  EXPECT_EQ(p.comm(7), "trainer");
  EXPECT_EQ(p.cgroup(7), "/kubepods/pod-a/ctr-1");
}

TEST_F(ProcessInfoTest, WithoutCgroupV2TheFirstV1HierarchyCounts) {
  write(7, "cgroup", "garbage\n12:cpu,cpuacct:/first\n4:memory:/second\n");
  ProcessInfo p(root_);
  p.next_collection(t0_);
  EXPECT_EQ(p.cgroup(7), "/first");
}

// Only a line that starts "0::" is cgroup v2's: one that differs from it in
// any byte of that marker is a v1 hierarchy (or no hierarchy line at all),
// and the first v1 hierarchy stays the answer.
TEST_F(ProcessInfoTest, OnlyTheWholeV2MarkerMakesTheV2Line) {
  const std::string marker = "0::";
  for (std::size_t i = 0; i < marker.size(); ++i) {
    std::string other = marker;
    other[i] = '7';
    write(7, "cgroup", "12:cpu,cpuacct:/first\n" + other + "/v2\n");
    ProcessInfo p(root_);
    p.next_collection(t0_);
    EXPECT_EQ(p.cgroup(7), "/first") << other;
  }
  write(7, "cgroup", "12:cpu,cpuacct:/first\n" + marker + "/v2\n");
  ProcessInfo p(root_);
  p.next_collection(t0_);
  EXPECT_EQ(p.cgroup(7), "/v2");
}

TEST_F(ProcessInfoTest, AGoneProcessHasNeitherNameNorCgroup) {
  ProcessInfo p(root_);
  p.next_collection(t0_);
  EXPECT_EQ(p.comm(9), std::nullopt);
  EXPECT_EQ(p.cgroup(9), std::nullopt);
}

TEST_F(ProcessInfoTest, KeptWhileThePidIsAskedAboutInEveryCollection) {
  write(7, "comm", "trainer\n");
  ProcessInfo p(root_);
  p.next_collection(t0_);
  EXPECT_EQ(p.comm(7), "trainer");
  write(7, "comm", "renamed\n");
  p.next_collection(t0_ + seconds(15));
  EXPECT_EQ(p.comm(7), "trainer");  // not read again
  p.next_collection(t0_ + seconds(30));
  EXPECT_EQ(p.comm(7), "trainer");
  EXPECT_EQ(p.size(), 1U);
}

TEST_F(ProcessInfoTest, APidAbsentForOneCollectionIsReadAfresh) {
  write(7, "comm", "old\n");
  ProcessInfo p(root_);
  p.next_collection(t0_);
  EXPECT_EQ(p.comm(7), "old");
  // The pid is reused by another process; one collection did not see it.
  write(7, "comm", "new\n");
  p.next_collection(t0_ + seconds(15));
  p.next_collection(t0_ + seconds(30));
  EXPECT_EQ(p.size(), 0U);
  EXPECT_EQ(p.comm(7), "new");
}

TEST_F(ProcessInfoTest, AnEntryIsReadAgainAfterItsAge) {
  // Pid 0 expires at half the age, pid 1023 just before the whole age.
  write(1024, "comm", "a\n");  // 1024 % 1024 == 0
  write(1023, "comm", "a\n");
  ProcessInfo p(root_);
  p.next_collection(t0_);
  EXPECT_EQ(p.comm(1024), "a");
  EXPECT_EQ(p.comm(1023), "a");
  write(1024, "comm", "b\n");
  write(1023, "comm", "b\n");
  const auto half = ProcessInfo::kMaxAge / 2;
  p.next_collection(t0_ + half - seconds(1));
  EXPECT_EQ(p.comm(1024), "a");
  EXPECT_EQ(p.comm(1023), "a");
  p.next_collection(t0_ + half);
  EXPECT_EQ(p.comm(1024), "b");
  EXPECT_EQ(p.comm(1023), "a");
  p.next_collection(t0_ + ProcessInfo::kMaxAge);
  EXPECT_EQ(p.comm(1023), "b");
  EXPECT_EQ(ProcessInfo::kMaxAge, minutes(5));
}

}  // namespace
}  // namespace rdma_exporter
