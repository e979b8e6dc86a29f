// OTLP's JSON encoding, read back by a strict JSON parser written for the
// tests (tests/support/json_parser.hpp).

#include "exporter/formats/otlp_json.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "common/metric_sink.hpp"
#include "tests/support/json_parser.hpp"
#include "tests/support/otlp_families.hpp"

namespace rdma_exporter {
namespace {

using namespace rdma_exporter::testing;

const Json* find_metric(const Json& request, const std::string& name) {
  const Json& metrics = request["resourceMetrics"][0]["scopeMetrics"][0]["metrics"];
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    if (metrics[i]["name"].str() == name) return &metrics[i];
  }
  return nullptr;
}

std::map<std::string, std::string> json_attributes(const Json& list) {
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    EXPECT_EQ(list[i]["value"].size(), 1u);
    out[list[i]["key"].str()] = list[i]["value"]["stringValue"].str();
  }
  return out;
}

TEST(OtlpJson, Structure) {
  const std::string text = encode_otlp_json(test_families(), test_context());
  const Json j = parse_json(text);
  const Json& rm = j["resourceMetrics"][0];
  EXPECT_EQ(json_attributes(rm["resource"]["attributes"]),
            (std::map<std::string, std::string>{{"service.name", "rdma_exporter"},
                                                {"host.name", "node7"}}));
  EXPECT_EQ(rm["scopeMetrics"][0]["scope"]["name"].str(), "rdma_exporter");
  EXPECT_EQ(rm["scopeMetrics"][0]["scope"]["version"].str(), "0.1.0");
  EXPECT_EQ(rm["scopeMetrics"][0]["metrics"].size(), 5u);

  const Json* counter = find_metric(j, "rdma.port.hw.rcvd_pkts");
  ASSERT_NE(counter, nullptr);
  EXPECT_EQ((*counter)["unit"].str(), "1");
  EXPECT_EQ((*counter)["description"].str(), "Received packets.");
  const Json& sum = (*counter)["sum"];
  EXPECT_EQ(sum["aggregationTemporality"].num(), 2);  // enums are numbers
  EXPECT_TRUE(sum["isMonotonic"].boolean());
  const Json& p = sum["dataPoints"][0];
  EXPECT_EQ(p["asInt"].str(), "123456789012");  // 64-bit integers are strings
  EXPECT_EQ(p["startTimeUnixNano"].str(), "1700000000000000000");
  EXPECT_EQ(p["timeUnixNano"].str(), "1700000060123456789");
  EXPECT_EQ(json_attributes(p["attributes"]),
            (std::map<std::string, std::string>{{"device", "rxe0"}, {"port", "1"}}));

  const Json* gauge = find_metric(j, "rdma.exporter.collector.duration");
  ASSERT_NE(gauge, nullptr);
  EXPECT_FALSE(gauge->has("sum"));
  EXPECT_FALSE((*gauge)["gauge"]["dataPoints"][0].has("startTimeUnixNano"));
  EXPECT_EQ((*gauge)["gauge"]["dataPoints"][0]["asDouble"].num(), 0.5);

  const Json* info = find_metric(j, "rdma.device.info");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ((*info)["gauge"]["dataPoints"][0]["asInt"].str(), "1");

  const Json* hist = find_metric(j, "rdma.exporter.probe_latency");
  ASSERT_NE(hist, nullptr);
  const Json& h = (*hist)["histogram"];
  EXPECT_EQ(h["aggregationTemporality"].num(), 2);
  const Json& hp = h["dataPoints"][0];
  EXPECT_EQ(hp["count"].str(), "10");
  EXPECT_EQ(hp["sum"].num(), 0.0375);
  ASSERT_EQ(hp["bucketCounts"].size(), 4u);
  EXPECT_EQ(hp["bucketCounts"][0].str(), "2");
  EXPECT_EQ(hp["bucketCounts"][1].str(), "5");
  EXPECT_EQ(hp["bucketCounts"][3].str(), "1");
  ASSERT_EQ(hp["explicitBounds"].size(), 3u);
  EXPECT_EQ(hp["explicitBounds"][2].num(), 0.01);
}

TEST(OtlpJson, NumbersAndSpecialValues) {
  MetricSink sink;
  sink.counter("rdma_a_total", "", {}, 1e19);
  sink.gauge("rdma_b", "", {}, -7);
  sink.gauge("rdma_c", "", {}, NAN);
  sink.gauge("rdma_d", "", {}, -INFINITY);
  sink.gauge("rdma_e_seconds", "", {}, 0.1);
  const std::string text = encode_otlp_json(sink.take(), test_context());
  const Json j = parse_json(text);
  auto point = [&](const std::string& name, const std::string& kind) -> const Json& {
    const Json* m = find_metric(j, name);
    static const Json missing;
    return m ? (*m)[kind]["dataPoints"][0] : missing;
  };
  EXPECT_EQ(point("rdma.a", "sum")["asDouble"].num(), 1e19);
  EXPECT_EQ(point("rdma.b", "gauge")["asInt"].str(), "-7");
  EXPECT_EQ(point("rdma.c", "gauge")["asDouble"].str(), "NaN");
  EXPECT_EQ(point("rdma.d", "gauge")["asDouble"].str(), "-Infinity");
  EXPECT_NE(text.find("\"asDouble\":0.1}"), std::string::npos) << text;  // shortest form
}

TEST(OtlpJson, StringsAreEscaped) {
  MetricSink sink;
  sink.gauge("rdma_x", "say \"hi\"\n", {{"comm", "a\"b\\c\nd\x01\x1f\t caf\xc3\xa9 \xff"}}, 1);
  OtlpEncodeContext ctx = test_context();
  ctx.resource_attributes.emplace_back("k\"ey", "v\\al");
  const std::string text = encode_otlp_json(sink.take(), ctx);
  EXPECT_NE(text.find(R"("a\"b\\c\nd\u0001\u001f\t caf)"), std::string::npos) << text;
  const Json j = parse_json(text);
  const Json* m = find_metric(j, "rdma.x");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ((*m)["description"].str(), "say \"hi\"\n");
  EXPECT_EQ(json_attributes((*m)["gauge"]["dataPoints"][0]["attributes"]).at("comm"),
            "a\"b\\c\nd\x01\x1f\t caf\xc3\xa9 \xef\xbf\xbd");
  EXPECT_EQ(json_attributes(j["resourceMetrics"][0]["resource"]["attributes"]).at("k\"ey"),
            "v\\al");
}

TEST(OtlpJson, EmptyRequestIsValid) {
  const Json j = parse_json(encode_otlp_json({}, test_context()));
  EXPECT_EQ(j["resourceMetrics"][0]["scopeMetrics"][0]["metrics"].size(), 0u);
}

// Histograms are cumulative: their points carry the start of the series, as
// sums do.
TEST(OtlpJson, HistogramPointsCarryTheStartOfTheSeries) {
  const Json j = parse_json(encode_otlp_json(test_families(), test_context()));
  const Json* hist = find_metric(j, "rdma.exporter.probe_latency");
  ASSERT_NE(hist, nullptr);
  const Json& p = (*hist)["histogram"]["dataPoints"][0];
  EXPECT_EQ(p["startTimeUnixNano"].str(), "1700000000000000000");
  EXPECT_EQ(p["timeUnixNano"].str(), "1700000060123456789");
  EXPECT_EQ(json_attributes(p["attributes"]),
            (std::map<std::string, std::string>{{"device", "mlx5_0"}}));
}

TEST(OtlpJson, Summary) {
  const Json j = parse_json(encode_otlp_json({summary_family()}, test_context()));
  const Json* m = find_metric(j, "rdma.x");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ((*m)["unit"].str(), "s");
  const Json& s = (*m)["summary"];
  EXPECT_FALSE(s.has("aggregationTemporality"));
  const Json& p = s["dataPoints"][0];
  EXPECT_EQ(p["startTimeUnixNano"].str(), "1700000000000000000");
  EXPECT_EQ(p["timeUnixNano"].str(), "1700000060123456789");
  EXPECT_EQ(p["count"].str(), "4");
  EXPECT_EQ(p["sum"].num(), 2.0);
  ASSERT_EQ(p["quantileValues"].size(), 2u);
  EXPECT_EQ(p["quantileValues"][1]["quantile"].num(), 0.99);
  EXPECT_EQ(p["quantileValues"][1]["value"].num(), 1.5);
  EXPECT_EQ(json_attributes(p["attributes"]),
            (std::map<std::string, std::string>{{"device", "rxe0"}}));
}

}  // namespace
}  // namespace rdma_exporter
