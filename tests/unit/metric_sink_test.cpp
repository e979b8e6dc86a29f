#include "common/metric_sink.hpp"

#include <gtest/gtest.h>

#include "exporter/formats/text.hpp"

namespace rdma_exporter {
namespace {

TEST(MetricSink, SamplesOfOneNameShareAFamilyInFirstSeenOrder) {
  MetricSink sink;
  sink.counter("b_total", "B.", {{"device", "x"}}, 1);
  sink.gauge("a", "A.", {}, 2);
  sink.counter("b_total", "B.", {{"device", "y"}}, 3);
  auto families = sink.take();
  ASSERT_EQ(families.size(), 2U);
  EXPECT_EQ(families[0].name, "b_total");
  EXPECT_EQ(families[0].metric.size(), 2U);
  EXPECT_EQ(families[0].metric[1].label[0].value, "y");
  EXPECT_EQ(families[1].name, "a");
}

TEST(MetricSink, SameNameWithAnotherTypeIsRejected) {
  MetricSink sink;
  sink.counter("x_total", "X.", {}, 1);
  sink.gauge("x_total", "X.", {}, 2);
  EXPECT_EQ(sink.rejected(), 1U);
  auto families = sink.take();
  ASSERT_EQ(families.size(), 1U);
  EXPECT_EQ(families[0].metric.size(), 1U);
}

TEST(MetricSink, KernelNamesBecomeValidMetricNames) {
  EXPECT_EQ(sanitize_metric_fragment("rx_write_requests"), "rx_write_requests");
  EXPECT_EQ(sanitize_metric_fragment("VL15_dropped"), "VL15_dropped");
  EXPECT_EQ(sanitize_metric_fragment("tx-bytes.phy"), "tx_bytes_phy");
  EXPECT_EQ(sanitize_metric_fragment("802_frames"), "_802_frames");
  EXPECT_EQ(sanitize_metric_fragment("a b\"c{"), "a_b_c_");
}

TEST(Exposition, LabelValuesAreEscaped) {
  MetricSink sink;
  sink.info("x_info", "X.", {{"node_desc", "a \"quoted\" \\ name\nnext"}});
  const std::string text = render_text(sink.take());
  EXPECT_NE(text.find(R"(x_info{node_desc="a \"quoted\" \\ name\nnext"} 1)"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace rdma_exporter
