#include "common/metric_sink.hpp"

#include <gtest/gtest.h>
#include <prometheus/histogram.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <limits>
#include <sstream>

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

TEST(MetricSink, HistogramsKeepTheirBucketsAndTakeTheLabels) {
  prometheus::Histogram a({0.5, 2}), b({0.5, 2});
  a.Observe(0.25);
  a.Observe(1);
  b.Observe(3);
  MetricSink sink;
  sink.histogram("h_seconds", "H.", {{"device", "x"}, {"port", "1"}}, a.Collect());
  sink.gauge("g", "G.", {}, 1);
  sink.histogram("h_seconds", "H.", {{"device", "y"}}, b.Collect());
  sink.counter("h_seconds", "H.", {}, 1);  // another type under the same name
  EXPECT_EQ(sink.rejected(), 1U);
  auto families = sink.take();
  ASSERT_EQ(families.size(), 2U);
  const auto& h = families[0];
  EXPECT_EQ(h.name, "h_seconds");
  EXPECT_EQ(h.type, prometheus::MetricType::Histogram);
  ASSERT_EQ(h.metric.size(), 2U);
  ASSERT_EQ(h.metric[0].label.size(), 2U);
  EXPECT_EQ(h.metric[0].label[0].name, "device");
  EXPECT_EQ(h.metric[0].label[0].value, "x");
  EXPECT_EQ(h.metric[0].label[1].value, "1");
  EXPECT_EQ(h.metric[0].histogram.sample_count, 2U);
  EXPECT_DOUBLE_EQ(h.metric[0].histogram.sample_sum, 1.25);
  ASSERT_EQ(h.metric[0].histogram.bucket.size(), 3U);  // 0.5, 2 and +Inf, cumulative
  EXPECT_EQ(h.metric[0].histogram.bucket[0].cumulative_count, 1U);
  EXPECT_EQ(h.metric[0].histogram.bucket[1].cumulative_count, 2U);
  EXPECT_EQ(h.metric[1].label[0].value, "y");
  EXPECT_EQ(h.metric[1].histogram.bucket[1].cumulative_count, 0U);
  EXPECT_EQ(h.metric[1].histogram.bucket[2].cumulative_count, 1U);
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

// Alternating names: the family of the previous sample is not the next
// one's, and a name comes back after others.
TEST(MetricSink, NamesComingBackJoinTheirFirstFamily) {
  MetricSink sink;
  sink.counter("a_total", "A.", {{"port", "1"}}, 1);
  sink.counter("b_total", "B.", {{"port", "1"}}, 2);
  sink.counter("a_total", "A.", {{"port", "2"}}, 3);
  sink.gauge("b_total", "B.", {{"port", "2"}}, 4);  // another type: rejected
  sink.counter("b_total", "B.", {{"port", "2"}}, 5);
  auto families = sink.take();
  ASSERT_EQ(families.size(), 2U);
  ASSERT_EQ(families[0].metric.size(), 2U);
  EXPECT_EQ(families[0].metric[1].counter.value, 3);
  ASSERT_EQ(families[1].metric.size(), 2U);
  EXPECT_EQ(families[1].metric[1].counter.value, 5);
  EXPECT_EQ(sink.rejected(), 1U);
  // Taken: the sink starts again empty.
  sink.gauge("a_total", "A.", {}, 1);
  EXPECT_EQ(sink.take().size(), 1U);
}

// Values as the Prometheus text format (prometheus-cpp's serializer) writes
// them: integral values as plain digits up to 16 digits, others with 16
// significant digits.
TEST(Exposition, ValuesAreWrittenAsTheTextFormatWritesThem) {
  MetricSink sink;
  for (double v :
       {0.0, 1.0, -1.0, 12.5e9, 0.1, 1e15, 1e16, 123456789012345678.0, 1.5e-7,
        18446744073709551615.0, -0.0, std::numeric_limits<double>::quiet_NaN(),
        std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
        312500000.0, 1234567890123456.0, 0.000123}) {
    sink.gauge("v", "Values.", {{"a", "b"}}, v);
  }
  sink.counter("c_total", "", {}, 7);
  const std::string text = render_text(sink.take());
  EXPECT_EQ(text,
            "# HELP v Values.\n"
            "# TYPE v gauge\n"
            "v{a=\"b\"} 0\n"
            "v{a=\"b\"} 1\n"
            "v{a=\"b\"} -1\n"
            "v{a=\"b\"} 12500000000\n"
            "v{a=\"b\"} 0.1\n"
            "v{a=\"b\"} 1000000000000000\n"
            "v{a=\"b\"} 1e+16\n"
            "v{a=\"b\"} 1.234567890123457e+17\n"
            "v{a=\"b\"} 1.5e-07\n"
            "v{a=\"b\"} 1.844674407370955e+19\n"
            "v{a=\"b\"} -0\n"
            "v{a=\"b\"} Nan\n"
            "v{a=\"b\"} +Inf\n"
            "v{a=\"b\"} -Inf\n"
            "v{a=\"b\"} 312500000\n"
            "v{a=\"b\"} 1234567890123456\n"
            "v{a=\"b\"} 0.000123\n"
            "# TYPE c_total counter\n"
            "c_total 7\n");
}

// Histograms, summaries, untyped samples and timestamps come out byte for
// byte as prometheus-cpp's own serializer writes them.
TEST(Exposition, EveryTypeMatchesTheLibrarySerializer) {
  std::vector<prometheus::MetricFamily> families;
  prometheus::MetricFamily h{"h_seconds", "H.", prometheus::MetricType::Histogram, {}};
  prometheus::ClientMetric hm;
  hm.label.push_back({"target", "a"});
  hm.histogram.sample_count = 3;
  hm.histogram.sample_sum = 0.25;
  hm.histogram.bucket.push_back({1, 0.005});
  hm.histogram.bucket.push_back({3, 1.0});
  h.metric.push_back(hm);
  families.push_back(h);
  prometheus::MetricFamily u{"u", "U.", prometheus::MetricType::Untyped, {}};
  prometheus::ClientMetric um;
  um.untyped.value = 2.5;
  um.timestamp_ms = 1700000000000;
  u.metric.push_back(um);
  families.push_back(u);
  prometheus::MetricFamily g{"g", "G.", prometheus::MetricType::Gauge, {}};
  prometheus::ClientMetric gm;
  gm.label.push_back({"x", "1"});
  gm.label.push_back({"y", "q\"\\\n"});
  gm.gauge.value = 3.14159265358979;
  g.metric.push_back(gm);
  families.push_back(g);
  std::ostringstream want;
  prometheus::TextSerializer().Serialize(want, families);
  EXPECT_EQ(render_text(families), want.str());
  EXPECT_NE(render_text(families).find("u 2.5 1700000000000\n"), std::string::npos);
  EXPECT_NE(render_text(families).find("h_seconds_bucket{target=\"a\",le=\"+Inf\"} 3\n"),
            std::string::npos);
}

}  // namespace
}  // namespace rdma_exporter
