// exporter/probe/verbs_device: the device clock and MTU conversions that need no device.

#include "exporter/probe/verbs/device.hpp"

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
#include "exporter/probe/stats/health.hpp"
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

TEST(ProbeVerbs, DeviceClockTicksBecomeSeconds) {
  // mlx5's hca_core_clock is in kHz: 1,000,000 kHz is a 1 GHz clock.
  EXPECT_DOUBLE_EQ(ticks_to_seconds(1000, 1000000), 1e-6);
  EXPECT_DOUBLE_EQ(ticks_to_seconds(156250, 156250), 1e-3);
  EXPECT_EQ(ticks_to_seconds(1000, 0), 0);  // no clock, no number
}

TEST(ProbeVerbs, MtuBytesAndEnumsRoundTrip) {
  for (uint32_t bytes : {256u, 512u, 1024u, 2048u, 4096u}) {
    EXPECT_EQ(mtu_bytes(mtu_enum(bytes)), bytes);
  }
  EXPECT_EQ(mtu_enum(4096), IBV_MTU_4096);
}
}  // namespace
}  // namespace rdma_exporter::probe
