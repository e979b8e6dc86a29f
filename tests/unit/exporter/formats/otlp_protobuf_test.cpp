// OTLP's protobuf encoding, read back by a decoder written from the wire
// format specification (tests/support/protobuf_decoder.hpp). Field numbers
// are those of opentelemetry-proto v1.

#include "exporter/formats/otlp_protobuf.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "common/metric_sink.hpp"
#include "common/text.hpp"
#include "tests/support/otlp_families.hpp"
#include "tests/support/otlp_request.hpp"
#include "tests/support/protobuf_decoder.hpp"

namespace rdma_exporter {
namespace {

using namespace rdma_exporter::testing;
using prometheus::MetricType;

TEST(OtlpProtobuf, ResourceAndScope) {
  const std::string body = encode_otlp_protobuf(test_families(), test_context());
  const DecodedRequest d = decode_request(body);
  EXPECT_EQ(d.resource.at("service.name"), "rdma_exporter");
  EXPECT_EQ(d.resource.at("host.name"), "node7");
  EXPECT_EQ(d.scope_name, "rdma_exporter");
  EXPECT_EQ(d.scope_version, "0.1.0");
  EXPECT_EQ(d.metrics.size(), 5u);
}

TEST(OtlpProtobuf, CounterIsAMonotonicCumulativeSumOfIntegers) {
  const auto d = decode_request(encode_otlp_protobuf(test_families(), test_context()));
  const auto metric = d.metrics.at("rdma.port.hw.rcvd_pkts");
  EXPECT_EQ(pb_one(metric, 2, 2).bytes, "Received packets.");
  EXPECT_EQ(pb_one(metric, 3, 2).bytes, "1");
  EXPECT_FALSE(pb_has(metric, 5));
  const auto sum = pb_one(metric, 7, 2).bytes;
  EXPECT_EQ(pb_one(sum, 2, 0).scalar, 2u);  // AGGREGATION_TEMPORALITY_CUMULATIVE
  EXPECT_EQ(pb_one(sum, 3, 0).scalar, 1u);  // is_monotonic
  const auto points = pb_all(sum, 1);
  ASSERT_EQ(points.size(), 1u);
  const auto p = points[0].bytes;
  EXPECT_EQ(pb_one(p, 2, 1).scalar, 1'700'000'000'000'000'000u);          // start_time_unix_nano
  EXPECT_EQ(pb_one(p, 3, 1).scalar, 1'700'000'060'123'456'789u);          // time_unix_nano
  EXPECT_EQ(static_cast<int64_t>(pb_one(p, 6, 1).scalar), 123456789012);  // as_int (sfixed64)
  EXPECT_FALSE(pb_has(p, 4));
  const auto attrs = pb_attributes(p, 7);
  EXPECT_EQ(attrs, (std::map<std::string, std::string>{{"device", "rxe0"}, {"port", "1"}}));
}

TEST(OtlpProtobuf, GaugeAndInfo) {
  const auto d = decode_request(encode_otlp_protobuf(test_families(), test_context()));

  const auto duration = d.metrics.at("rdma.exporter.collector.duration");
  EXPECT_EQ(pb_one(duration, 3, 2).bytes, "s");
  EXPECT_FALSE(pb_has(duration, 7));
  const auto p = pb_one(pb_one(duration, 5, 2).bytes, 1, 2).bytes;
  EXPECT_FALSE(pb_has(p, 2));                                     // gauges carry no start time
  EXPECT_EQ(pb_one(p, 3, 1).scalar, 1'700'000'060'123'456'789u);  // time_unix_nano
  EXPECT_EQ(as_double(pb_one(p, 4, 1).scalar), 0.5);
  EXPECT_FALSE(pb_has(p, 6));

  const auto info = d.metrics.at("rdma.device.info");
  EXPECT_EQ(pb_one(info, 3, 2).bytes, "1");
  const auto ip = pb_one(pb_one(info, 5, 2).bytes, 1, 2).bytes;
  EXPECT_EQ(pb_one(ip, 6, 1).scalar, 1u);
  const auto attrs = pb_attributes(ip, 7);
  EXPECT_EQ(attrs.at("fw_version"), "");  // empty labels are kept

  const auto rate = d.metrics.at("rdma.port.rate");
  EXPECT_FALSE(pb_has(rate, 2));  // no help, no description
  EXPECT_EQ(pb_one(rate, 3, 2).bytes, "By/s");
  const auto rp = pb_one(pb_one(rate, 5, 2).bytes, 1, 2).bytes;
  EXPECT_EQ(pb_one(rp, 6, 1).scalar, 12500000000u);
}

TEST(OtlpProtobuf, HistogramHasPerBucketCounts) {
  const auto d = decode_request(encode_otlp_protobuf(test_families(), test_context()));
  const auto metric = d.metrics.at("rdma.exporter.probe_latency");
  EXPECT_EQ(pb_one(metric, 3, 2).bytes, "s");
  const auto h = pb_one(metric, 9, 2).bytes;
  EXPECT_EQ(pb_one(h, 2, 0).scalar, 2u);
  const auto p = pb_one(h, 1, 2).bytes;
  EXPECT_EQ(pb_one(p, 2, 1).scalar, 1'700'000'000'000'000'000u);  // start_time_unix_nano
  EXPECT_EQ(pb_one(p, 3, 1).scalar, 1'700'000'060'123'456'789u);  // time_unix_nano
  EXPECT_EQ(pb_one(p, 4, 1).scalar, 10u);                         // count (fixed64)
  EXPECT_EQ(as_double(pb_one(p, 5, 1).scalar), 0.0375);
  const auto counts = pb_one(p, 6, 2).bytes;  // packed fixed64
  ASSERT_EQ(counts.size(), 4u * 8);
  std::vector<uint64_t> c;
  for (int i = 0; i < 4; ++i) c.push_back(read_le(counts.substr(i * 8, 8), 8));
  EXPECT_EQ(c, (std::vector<uint64_t>{2, 5, 2, 1}));
  const auto bounds = pb_one(p, 7, 2).bytes;  // packed double, +Inf implied
  ASSERT_EQ(bounds.size(), 3u * 8);
  EXPECT_EQ(as_double(read_le(bounds.substr(0, 8), 8)), 0.001);
  EXPECT_EQ(as_double(read_le(bounds.substr(8, 8), 8)), 0.005);
  EXPECT_EQ(as_double(read_le(bounds.substr(16, 8), 8)), 0.01);
  EXPECT_EQ(pb_attributes(p, 9).at("device"), "mlx5_0");
}

TEST(OtlpProtobuf, IntegerOrDouble) {
  MetricSink sink;
  sink.counter("rdma_a_total", "", {}, 5);
  sink.counter("rdma_b_total", "", {}, 1.5);
  sink.counter("rdma_c_total", "", {}, 1e19);                // beyond int64
  sink.counter("rdma_d_total", "", {}, 9007199254740993.0);  // integral (2^53 + 2 after rounding)
  sink.gauge("rdma_e", "", {}, -7);
  sink.gauge("rdma_f_seconds", "", {}, 2);  // times stay doubles
  sink.gauge("rdma_g", "", {}, NAN);
  const auto d = decode_request(encode_otlp_protobuf(sink.take(), test_context()));
  auto point = [&](const std::string& name, uint32_t kind) {
    return pb_one(pb_one(d.metrics.at(name), kind, 2).bytes, 1, 2).bytes;
  };
  EXPECT_EQ(pb_one(point("rdma.a", 7), 6, 1).scalar, 5u);
  EXPECT_EQ(as_double(pb_one(point("rdma.b", 7), 4, 1).scalar), 1.5);
  EXPECT_EQ(as_double(pb_one(point("rdma.c", 7), 4, 1).scalar), 1e19);
  EXPECT_EQ(pb_one(point("rdma.d", 7), 6, 1).scalar, 9007199254740992u);
  EXPECT_EQ(static_cast<int64_t>(pb_one(point("rdma.e", 5), 6, 1).scalar), -7);
  EXPECT_EQ(as_double(pb_one(point("rdma.f", 5), 4, 1).scalar), 2.0);
  EXPECT_TRUE(std::isnan(as_double(pb_one(point("rdma.g", 5), 4, 1).scalar)));
}

TEST(OtlpProtobuf, ZeroIsStillSent) {
  MetricSink sink;
  sink.counter("rdma_a_total", "", {}, 0);
  sink.gauge("rdma_b_seconds", "", {}, 0);
  const auto d = decode_request(encode_otlp_protobuf(sink.take(), test_context()));
  const auto a = pb_one(pb_one(d.metrics.at("rdma.a"), 7, 2).bytes, 1, 2).bytes;
  EXPECT_EQ(pb_one(a, 6, 1).scalar, 0u);
  const auto b = pb_one(pb_one(d.metrics.at("rdma.b"), 5, 2).bytes, 1, 2).bytes;
  EXPECT_EQ(as_double(pb_one(b, 4, 1).scalar), 0.0);
}

TEST(OtlpProtobuf, LabelBytesBecomeValidUtf8) {
  MetricSink sink;
  sink.gauge("rdma_x", "", {{"comm", "a\"b\\c\nd\x01 caf\xc3\xa9 \xff\xc3"}}, 1);
  const auto d = decode_request(encode_otlp_protobuf(sink.take(), test_context()));
  const auto p = pb_one(pb_one(d.metrics.at("rdma.x"), 5, 2).bytes, 1, 2).bytes;
  EXPECT_EQ(pb_attributes(p, 7).at("comm"), "a\"b\\c\nd\x01 caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd");
}

TEST(OtlpProtobuf, SummaryAndEmptyFamilies) {
  prometheus::MetricFamily empty{"rdma_y_total", "", MetricType::Counter, {}};
  const auto d = decode_request(encode_otlp_protobuf({summary_family(), empty}, test_context()));
  ASSERT_EQ(d.metrics.size(), 1u);
  const auto p = pb_one(pb_one(d.metrics.at("rdma.x"), 11, 2).bytes, 1, 2).bytes;
  EXPECT_EQ(pb_one(p, 2, 1).scalar, 1'700'000'000'000'000'000u);  // start_time_unix_nano
  EXPECT_EQ(pb_one(p, 3, 1).scalar, 1'700'000'060'123'456'789u);  // time_unix_nano
  EXPECT_EQ(pb_one(p, 4, 1).scalar, 4u);
  EXPECT_EQ(as_double(pb_one(p, 5, 1).scalar), 2.0);
  const auto q = pb_all(p, 6);
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(as_double(pb_one(q[1].bytes, 1, 1).scalar), 0.99);
  EXPECT_EQ(as_double(pb_one(q[1].bytes, 2, 1).scalar), 1.5);
  EXPECT_EQ(pb_attributes(p, 7).at("device"), "rxe0");
}

TEST(OtlpProtobuf, LargeMessagesHaveMultiByteLengths) {
  MetricSink sink;
  for (int i = 0; i < 3000; ++i) {
    sink.counter("rdma_port_hw_x_total", "", {{"device", "mlx5_" + std::to_string(i)}}, i);
  }
  const std::string body = encode_otlp_protobuf(sink.take(), test_context());
  EXPECT_GT(body.size(), 128u * 128u);
  const auto d = decode_request(body);
  const auto points = pb_all(pb_one(d.metrics.at("rdma.port.hw.x"), 7, 2).bytes, 1);
  ASSERT_EQ(points.size(), 3000u);
  EXPECT_EQ(pb_one(points[2999].bytes, 6, 1).scalar, 2999u);
}

// Protobuf strings must be UTF-8; label values need not be.
TEST(OtlpUtf8, RepairsOnlyWhatIsBroken) {
  EXPECT_EQ(valid_utf8("plain"), "plain");
  EXPECT_EQ(valid_utf8("\xe2\x82\xac \xf0\x9f\x98\x80"), "\xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(valid_utf8("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");                  // overlong
  EXPECT_EQ(valid_utf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // surrogate
  EXPECT_EQ(valid_utf8("\xe2\x82"), "\xef\xbf\xbd\xef\xbf\xbd");                  // truncated
}

}  // namespace
}  // namespace rdma_exporter
