#include "exporter/privileges.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "collectors/qp_counters/options.hpp"

namespace rdma_exporter {
namespace {

std::string fake_proc(const std::string& cap_eff, const std::string& pid_ns) {
  const std::string root = ::testing::TempDir() + "privileges_proc_" + std::to_string(::getpid()) +
                           "_" + cap_eff + (pid_ns.size() > 10 ? pid_ns.substr(5, 10) : "");
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root + "/self/ns");
  std::ofstream(root + "/self/status") << "Name:\trdma_exporter\nCapInh:\t0000000000000000\n"
                                       << "CapEff:\t" << cap_eff << "\nCapBnd:\t000001ffffffffff\n";
  std::filesystem::create_symlink(pid_ns, root + "/self/ns/pid");
  return root;
}

Config managing() {
  Config c;
  c.collectors.options<QpCountersOptions>().ports = {
      {.device = ".*", .mode = QpCountersOptions::Mode::auto_mode}};
  return c;
}

TEST(Privileges, ReadsCapNetAdminAndThePidNamespace) {
  auto root = fake_proc("0000000000001000", "pid:[4026531836]");
  Privileges p = read_privileges(root);
  EXPECT_TRUE(p.cap_net_admin);
  EXPECT_TRUE(p.host_pid_namespace);
  root = fake_proc("00000000a80425fb", "pid:[4026532712]");  // a container's default set
  p = read_privileges(root);
  EXPECT_FALSE(p.cap_net_admin);
  EXPECT_FALSE(p.host_pid_namespace);
}

TEST(Privileges, GarbageInProcIsNoCapabilityNotACrash) {
  auto root = fake_proc("zzz", "nonsense");
  Privileges p = read_privileges(root);
  EXPECT_FALSE(p.cap_net_admin);
  EXPECT_FALSE(p.host_pid_namespace);
  p = read_privileges("/nonexistent-proc");
  EXPECT_FALSE(p.cap_net_admin);
  EXPECT_TRUE(p.host_pid_namespace);  // unknown: no warning
}

TEST(Privileges, SaysOnceWhatCannotWork) {
  EXPECT_TRUE(privilege_problems(Config{}, {.cap_net_admin = false}).empty());  // observe only
  auto problems = privilege_problems(managing(), {.cap_net_admin = false});
  ASSERT_EQ(problems.size(), 1U);
  EXPECT_NE(problems[0].find("CAP_NET_ADMIN"), std::string::npos);
  EXPECT_TRUE(privilege_problems(managing(), {.cap_net_admin = true}).empty());
  problems = privilege_problems(Config{}, {.cap_net_admin = true, .host_pid_namespace = false});
  ASSERT_EQ(problems.size(), 1U);
  EXPECT_NE(problems[0].find("pid namespace"), std::string::npos);
  Config off;
  off.collectors.set_enabled("qp_counters", false);
  EXPECT_TRUE(
      privilege_problems(off, {.cap_net_admin = false, .host_pid_namespace = false}).empty());
}

TEST(Privileges, ProbeNeedsAVerbsDeviceNode) {
  const std::string dev = ::testing::TempDir() + "/privileges-dev";
  std::filesystem::remove_all(dev);
  std::filesystem::create_directories(dev);
  EXPECT_FALSE(read_privileges("/proc", dev).verbs_device);
  EXPECT_FALSE(read_privileges("/proc", dev + "/missing").verbs_device);
  std::ofstream(dev + "/rdma_cm") << "";
  EXPECT_FALSE(read_privileges("/proc", dev).verbs_device);  // not a verbs node
  std::ofstream(dev + "/uverbs0") << "";
  EXPECT_TRUE(read_privileges("/proc", dev).verbs_device);

  Config probing;
  probing.probe.enabled = true;
  Privileges none{.cap_net_admin = true, .host_pid_namespace = true, .verbs_device = false};
  auto problems = privilege_problems(probing, none);
  ASSERT_EQ(problems.size(), 1U);
  EXPECT_NE(problems[0].find("/dev/infiniband"), std::string::npos);
  EXPECT_TRUE(privilege_problems(Config{}, none).empty());  // no probe, no problem
}

}  // namespace
}  // namespace rdma_exporter
