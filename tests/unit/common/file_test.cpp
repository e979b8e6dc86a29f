// common/file: read_file takes regular files only, up to a limit checked
// before reading, and never waits in open(): a FIFO, a device, a directory
// and a terminal are refused at once, with a message that says what they are.

#include "common/file.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

namespace rdma_exporter {
namespace {

class ReadFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/read_file_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A file of `size` bytes of `fill`, or a sparse one (a hole) when `fill`
  // is 0.
  std::string file_of(std::size_t size, char fill) {
    const std::string path = dir_ + "/file";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    EXPECT_GE(fd, 0);
    if (fill == 0) {
      EXPECT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
    } else {
      const std::string text(size, fill);
      EXPECT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    }
    ::close(fd);
    return path;
  }

  std::string dir_;
};

TEST_F(ReadFile, ARegularFileIsReadWhole) {
  const std::string path = file_of(100000, 'x');
  auto text = read_file(path, 1 << 20, "the file");
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, std::string(100000, 'x'));
}

TEST_F(ReadFile, AFileOfExactlyTheLimitIsRead) {
  const std::string path = file_of(70000, 'y');
  auto text = read_file(path, 70000, "the file");
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(text->size(), 70000u);
}

// Refused by its size before a byte is read: the message gives the size.
TEST_F(ReadFile, AFileOverTheLimitIsRefusedBeforeItIsRead) {
  const std::size_t gib = std::size_t{1} << 30;
  const std::string path = file_of(gib, 0);
  auto text = read_file(path, 1 << 20, "the file");
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code, EFBIG);
  EXPECT_EQ(text.error().message, "the file: is 1073741824 bytes, more than 1048576 bytes");
  const std::string one_more = file_of(70001, 'z');
  text = read_file(one_more, 70000, "the file");
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().message, "the file: is 70001 bytes, more than 70000 bytes");
}

// A kernel file says size 0: the bytes read are bounded all the same.
TEST_F(ReadFile, WhatAReadGivesIsBoundedToo) {
  auto text = read_file("/proc/self/stat", 10, "stat");
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code, EFBIG);
  EXPECT_EQ(text.error().message, "stat: more than 10 bytes");
}

// Without a writer, a blocking open() of a FIFO would wait for one.
TEST_F(ReadFile, AFifoIsRefusedWithoutWaitingForAWriter) {
  const std::string path = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  std::promise<Result<std::string>> result;
  auto read = result.get_future();
  std::thread reader([&] { result.set_value(read_file(path, 1 << 20, "peers " + path)); });
  const bool returned = read.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  if (!returned) {
    // A writer lets the open() return, so that the test ends.
    const int writer = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (writer >= 0) ::close(writer);
  }
  reader.join();
  EXPECT_TRUE(returned) << "read_file waited in open() for a writer";
  auto text = read.get();
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code, EINVAL);
  EXPECT_EQ(text.error().message, "peers " + path + ": is a FIFO, not a regular file");
}

TEST_F(ReadFile, ACharacterDeviceIsRefused) {
  auto text = read_file("/dev/null", 1 << 20, "/dev/null");
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().message, "/dev/null: is a character device, not a regular file");
  text = read_file("/dev/zero", 1 << 20, "/dev/zero");
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().message, "/dev/zero: is a character device, not a regular file");
}

TEST_F(ReadFile, ADirectoryIsRefused) {
  auto text = read_file(dir_, 1 << 20, dir_);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code, EINVAL);
  EXPECT_EQ(text.error().message, dir_ + ": is a directory, not a regular file");
}

TEST_F(ReadFile, AMissingFileCarriesItsErrno) {
  auto text = read_file(dir_ + "/missing", 1 << 20, "the file");
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code, ENOENT);
  EXPECT_EQ(text.error().message, "the file: No such file or directory");
}

// A daemon is a session leader without a terminal: opening a terminal
// without O_NOCTTY would make it the daemon's controlling terminal (whose
// hangup and job control signals then reach it).
TEST_F(ReadFile, ATerminalIsRefusedAndNeverBecomesTheControllingTerminal) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) {
    GTEST_SKIP() << "no pseudo-terminal here";
  }
  std::array<char, 64> name{};
  ASSERT_EQ(::ptsname_r(master, name.data(), name.size()), 0);
  const std::string terminal = name.data();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Exit codes: 0 refused and no controlling terminal, 1 read, 2 the
    // terminal became the controlling one, 3 no new session, 4 another
    // message.
    if (::setsid() < 0) ::_exit(3);
    auto text = read_file(terminal, 1 << 20, terminal);
    if (text) ::_exit(1);
    if (text.error().message != terminal + ": is a character device, not a regular file") {
      ::_exit(4);
    }
    const int tty = ::open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
    ::_exit(tty >= 0 ? 2 : 0);
  }
  // A read of a terminal would wait for a line: the child gets 20 s.
  int status = 0;
  pid_t ended = 0;
  for (int i = 0; i < 2000 && ended == 0; ++i) {
    ended = ::waitpid(child, &status, WNOHANG);
    if (ended == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (ended == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
  }
  ::close(master);
  ASSERT_NE(ended, 0) << "read_file waited on the terminal";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace rdma_exporter
