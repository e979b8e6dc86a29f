// exporter/probe/verbs/borrowed_fd: waits are cancelled and the descriptor
// is handed back open, never closed, on reset, destruction and move.

#include "exporter/probe/verbs/borrowed_fd.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace rdma_exporter::probe {
namespace {

bool is_open(int fd) {
  return ::fcntl(fd, F_GETFD) != -1;
}

class BorrowedFdTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(::pipe(fds_), 0); }
  void TearDown() override {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  int fds_[2] = {-1, -1};
  boost::asio::io_context io_;
};

TEST_F(BorrowedFdTest, ResetCancelsTheWaitAndLeavesTheDescriptorOpen) {
  BorrowedFd fd(io_, fds_[0]);
  ASSERT_TRUE(fd);
  boost::system::error_code got;
  int calls = 0;
  fd->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                 [&](const boost::system::error_code& ec) {
                   got = ec;
                   ++calls;
                 });
  fd.reset();
  EXPECT_FALSE(fd);
  io_.run();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(got, boost::asio::error::operation_aborted);
  EXPECT_TRUE(is_open(fds_[0]));
  fd.reset();  // again: nothing
  EXPECT_TRUE(is_open(fds_[0]));
}

TEST_F(BorrowedFdTest, DestructionAndMoveNeverClose) {
  {
    BorrowedFd a(io_, fds_[0]);
    BorrowedFd b(std::move(a));
    EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
    EXPECT_TRUE(b);
    BorrowedFd c;
    c = std::move(b);
    EXPECT_TRUE(c);
    EXPECT_FALSE(b);  // NOLINT(bugprone-use-after-move)
  }
  EXPECT_TRUE(is_open(fds_[0]));
  // Still usable by its owner: a write to the pipe reads back.
  ASSERT_EQ(::write(fds_[1], "x", 1), 1);
  char c = 0;
  EXPECT_EQ(::read(fds_[0], &c, 1), 1);
  EXPECT_EQ(c, 'x');
}

TEST_F(BorrowedFdTest, EmplaceReplacesWithoutClosingTheFirst) {
  BorrowedFd fd(io_, fds_[0]);
  fd.emplace(io_, fds_[1]);
  EXPECT_TRUE(is_open(fds_[0]));
  EXPECT_TRUE(is_open(fds_[1]));
}

}  // namespace
}  // namespace rdma_exporter::probe
