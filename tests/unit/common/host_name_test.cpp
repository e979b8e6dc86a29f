// common/host_name against the kernel's node name as uname(2) reports it.

#include "common/host_name.hpp"

#include <gtest/gtest.h>
#include <sys/utsname.h>

namespace rdma_exporter {
namespace {

TEST(HostName, IsTheKernelsNodeName) {
  utsname u{};
  ASSERT_EQ(::uname(&u), 0);
  EXPECT_EQ(host_name(), std::string(u.nodename));
  EXPECT_FALSE(host_name().empty());
}

}  // namespace
}  // namespace rdma_exporter
