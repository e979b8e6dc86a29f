// exporter/formats/output_formats: the table --format and its help read,
// and what each row renders.

#include "exporter/formats/output_formats.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "common/metric_sink.hpp"
#include "exporter/cli.hpp"

namespace rdma_exporter {
namespace {

Snapshot snapshot() {
  Snapshot s;
  MetricSink sink;
  sink.counter("rdma_port_hw_rcvd_pkts_total", "Received packets.",
               {{"device", "rxe0"}, {"port", "1"}}, 42);
  s.families = sink.take();
  s.text = "the snapshot's own text\n";
  return s;
}

TEST(OutputFormats, TheTableInOrderWithContentTypes) {
  std::vector<std::string> names;
  for (const OutputFormat& f : output_formats()) names.emplace_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"prometheus", "openmetrics", "json", "otlp-json"}));
  EXPECT_EQ(find_output_format("prometheus")->content_type,
            "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(find_output_format("openmetrics")->content_type,
            "application/openmetrics-text; version=1.0.0; charset=utf-8");
  EXPECT_EQ(find_output_format("json")->content_type, "application/json");
  EXPECT_EQ(find_output_format("otlp-json")->content_type, "application/json");
  EXPECT_EQ(find_output_format("text"), nullptr);
  EXPECT_EQ(find_output_format(""), nullptr);
  EXPECT_EQ(output_format_list(true), "prometheus (default), openmetrics, json or otlp-json");
  EXPECT_EQ(output_format_list(false), "prometheus, openmetrics, json or otlp-json");
}

TEST(OutputFormats, EachRowRendersItsOwnFormat) {
  const Snapshot s = snapshot();
  OtlpEncodeContext otlp;
  otlp.start_time_unix_nano = 1'700'000'000'000'000'000ULL;
  otlp.time_unix_nano = 1'700'000'001'000'000'000ULL;
  const RenderInput in{s, otlp, 1234.5};
  EXPECT_EQ(find_output_format("prometheus")->render(in), "the snapshot's own text\n");
  const std::string om = find_output_format("openmetrics")->render(in);
  EXPECT_NE(om.find("rdma_port_hw_rcvd_pkts_total{device=\"rxe0\",port=\"1\"} 42"),
            std::string::npos)
      << om;
  EXPECT_TRUE(om.ends_with("# EOF\n"));
  const std::string json = find_output_format("json")->render(in);
  EXPECT_NE(json.find("1234.5"), std::string::npos) << json;
  EXPECT_NE(json.find("\"rdma_port_hw_rcvd_pkts_total\""), std::string::npos) << json;
  const std::string otlp_json = find_output_format("otlp-json")->render(in);
  EXPECT_NE(otlp_json.find("\"startTimeUnixNano\":\"1700000000000000000\""), std::string::npos)
      << otlp_json;
}

TEST(OutputFormats, TheCommandLineTakesEveryNameAndRefusesOthers) {
  for (const OutputFormat& f : output_formats()) {
    CommandLine cli;
    const std::string format = "--format=" + std::string(f.name);
    const char* argv[] = {"rdma_exporter", "--once", format.c_str()};
    EXPECT_TRUE(parse_command_line(3, argv, cli).empty()) << f.name;
    EXPECT_EQ(cli.format, f.name);
  }
  CommandLine cli;
  const char* argv[] = {"rdma_exporter", "--once", "--format=yaml"};
  EXPECT_EQ(parse_command_line(3, argv, cli),
            (std::vector<std::string>{
                "--format: expected prometheus, openmetrics, json or otlp-json, got \"yaml\""}));
}

}  // namespace
}  // namespace rdma_exporter
