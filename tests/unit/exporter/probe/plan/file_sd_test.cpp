// exporter/probe/plan/file_sd: the files are looked at on the reader's
// thread, never on the probe's loop; a look begun before another list of
// files is dropped; a FIFO in place of a file keeps the targets and is said
// once.

#include "exporter/probe/plan/file_sd.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <fstream>
#include <future>

#include "common/background_reader.hpp"
#include "tests/support/run_until.hpp"
#include "tests/support/snapshot_query.hpp"

namespace rdma_exporter::probe {
namespace {

using rdma_exporter::testing::run_until;
using rdma_exporter::testing::sample;

class FileSdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/file_sd_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    health_.set_listening(true);
  }
  void TearDown() override {
    files_.stop();
    std::filesystem::remove_all(dir_);
  }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  // Holds the reader's thread until the returned promise is set.
  std::promise<void> block_the_reader() {
    std::promise<void> release;
    reader_.run(
        [held = release.get_future().share()] {
          held.wait();
          return true;
        },
        [](bool) {});
    return release;
  }

  // Runs the loop until everything asked of the reader so far is taken.
  void settle() {
    bool done = false;
    reader_.run([] { return true; }, [&done](bool) { done = true; });
    run_until(io_, [&] { return done; });
  }

  double failures() {
    MetricSink sink;
    stats_->add_metrics(sink);
    Snapshot snap;
    snap.families = sink.take();
    return sample(snap, "rdma_probe_file_sd_failures_total");
  }

  std::string dir_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> busy_ =
      boost::asio::make_work_guard(io_);
  BackgroundReader reader_{io_};
  std::shared_ptr<ProbeStats> stats_ = std::make_shared<ProbeStats>();
  ProbeHealth health_;
  std::vector<bool> looks_;  // what each look said: changed or not
  FileSdTargets files_{io_, reader_, stats_, health_,
                       [this](bool changed) { looks_.push_back(changed); }};
};

TEST_F(FileSdTest, FilesAreReadOnTheReadersThreadNeverOnTheLoop) {
  const std::string path = write("peers.yml", "- targets: [a:1, b:1]\n");
  std::promise<void> release = block_the_reader();
  files_.configure({path}, std::chrono::hours(1));
  files_.refresh();
  // The reader is held: nothing was read, whatever the loop runs.
  io_.poll();
  EXPECT_TRUE(looks_.empty());
  EXPECT_TRUE(files_.targets().empty());
  release.set_value();
  run_until(io_, [&] { return !looks_.empty(); });
  EXPECT_EQ(looks_, std::vector<bool>{true});
  EXPECT_EQ(files_.targets().size(), 2u);
}

TEST_F(FileSdTest, ALookBegunBeforeAnotherListOfFilesIsDropped) {
  const std::string a = write("a.yml", "- targets: [a:1]\n");
  const std::string b = write("b.yml", "- targets: [b:1, c:1]\n");
  std::promise<void> release = block_the_reader();
  files_.configure({a}, std::chrono::hours(1));
  files_.refresh();
  files_.configure({b}, std::chrono::hours(1));
  files_.refresh();
  release.set_value();
  settle();
  EXPECT_EQ(looks_, std::vector<bool>{true});
  ASSERT_EQ(files_.targets().size(), 2u);
  EXPECT_EQ(files_.targets()[0].address, "b:1");
  EXPECT_TRUE(health_.problems().empty());
}

TEST_F(FileSdTest, AFifoKeepsTheTargetsAndIsCountedOnce) {
  const std::string path = write("peers.yml", "- targets: [a:1, b:1]\n");
  files_.configure({path}, std::chrono::hours(1));
  files_.refresh();
  settle();
  ASSERT_EQ(files_.targets().size(), 2u);
  ASSERT_EQ(::unlink(path.c_str()), 0);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  files_.refresh();
  settle();
  files_.refresh();
  settle();
  EXPECT_EQ(looks_, (std::vector<bool>{true, false, false}));
  EXPECT_EQ(files_.targets().size(), 2u);
  EXPECT_EQ(health_.problems(),
            std::vector<std::string>{"file_sd " + path + ": is a FIFO, not a regular file"});
  EXPECT_EQ(failures(), 1);
}

}  // namespace
}  // namespace rdma_exporter::probe
