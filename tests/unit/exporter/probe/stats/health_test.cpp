// exporter/probe/health: the probe's own problems, in a fixed order until cleared.

#include "exporter/probe/stats/health.hpp"

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>
#include <filesystem>
#include <future>
#include <limits>
#include <thread>

#include "common/yaml_walker.hpp"
#include "exporter/probe/control/channel.hpp"
#include "exporter/probe/control/discovery.hpp"
#include "exporter/probe/control/responder.hpp"
#include "exporter/probe/plan/targets.hpp"
#include "exporter/probe/probe.hpp"
#include "exporter/probe/verbs/device.hpp"
#include "exporter/probe/wire/auth.hpp"
#include "tests/support/control_client.hpp"
#include "tests/support/responder_fixture.hpp"
#include "tests/support/snapshot_query.hpp"
#include "tests/support/wait.hpp"

namespace rdma_exporter::probe {
namespace {

using boost::asio::ip::tcp;
using rdma_exporter::testing::closed_by_peer;
using rdma_exporter::testing::has_family;
using rdma_exporter::testing::metrics_of;
using rdma_exporter::testing::read_message;
using rdma_exporter::testing::sample;
using rdma_exporter::testing::series_count;

TEST(ProbeHealthTest, ProblemsInAFixedOrderUntilCleared) {
  ProbeHealth h;
  EXPECT_EQ(h.problems(), std::vector<std::string>{"the probe responder is not listening"});
  h.set_listening(true);
  EXPECT_TRUE(h.problems().empty());
  h.set_file_sd_problem("/b.json", "file_sd /b.json: Permission denied");
  h.set_file_sd_problem("/a.json", "file_sd /a.json: No such file or directory");
  h.set_memory_problem("probe.memory udmabuf cannot be used on mlx5_0: no udmabuf");
  h.set_device_problem("no RDMA device named mlx5_9");
  h.set_loop_failed("bad_alloc");
  EXPECT_EQ(h.problems(), (std::vector<std::string>{
                              "the probe's event loop stopped: bad_alloc",
                              "no RDMA device named mlx5_9",
                              "probe.memory udmabuf cannot be used on mlx5_0: no udmabuf",
                              "file_sd /a.json: No such file or directory",
                              "file_sd /b.json: Permission denied",
                          }));
  h.set_file_sd_problem("/a.json", "");
  h.set_device_problem("");
  h.set_memory_problem("");
  EXPECT_EQ(h.problems(), (std::vector<std::string>{"the probe's event loop stopped: bad_alloc",
                                                    "file_sd /b.json: Permission denied"}));
  h.forget_file_sd();
  h.set_listening(false);
  EXPECT_EQ(h.problems(), (std::vector<std::string>{"the probe's event loop stopped: bad_alloc",
                                                    "the probe responder is not listening"}));
}

}  // namespace
}  // namespace rdma_exporter::probe
