// OTLP push: name mapping, both encodings (read back by decoders written
// here, independent of the encoder), configuration, and the pusher against
// an in-process HTTP receiver.

#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cmath>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <variant>

#include "common/metric_sink.hpp"
#include "common/text.hpp"
#include "exporter/config.hpp"
#include "exporter/formats/otlp_json.hpp"
#include "exporter/formats/otlp_naming.hpp"
#include "exporter/formats/otlp_protobuf.hpp"
#include "exporter/otlp/options.hpp"
#include "exporter/otlp/pusher.hpp"
#include "snapshot_query.hpp"

namespace rdma_exporter {
namespace {

using prometheus::MetricType;

// ------------------------------------------------------------------ naming

TEST(OtlpNaming, RuleExamples) {
  struct Case {
    const char* prometheus;
    MetricType type;
    const char* name;
    const char* unit;
  } cases[] = {
      {"rdma_port_hw_rcvd_pkts_total", MetricType::Counter, "rdma.port.hw.rcvd_pkts", "1"},
      {"rdma_port_pma_port_xmit_data_bytes_total", MetricType::Counter,
       "rdma.port.pma.port_xmit_data", "By"},
      {"rdma_port_pma_VL15_dropped_total", MetricType::Counter, "rdma.port.pma.VL15_dropped", "1"},
      {"rdma_port_rate_bytes_per_second", MetricType::Gauge, "rdma.port.rate", "By/s"},
      {"rdma_port_state", MetricType::Gauge, "rdma.port.state", "1"},
      {"rdma_port_link_layer_info", MetricType::Gauge, "rdma.port.link_layer_info", "1"},
      {"rdma_device_info", MetricType::Gauge, "rdma.device.info", "1"},
      {"rdma_device_hw_submitted_cmds_total", MetricType::Counter, "rdma.device.hw.submitted_cmds",
       "1"},
      {"rdma_qp_stat_rx_write_requests_total", MetricType::Counter,
       "rdma.qp.stat.rx_write_requests", "1"},
      {"rdma_qps", MetricType::Gauge, "rdma.qps", "1"},
      {"rdma_exporter_collector_duration_seconds", MetricType::Gauge,
       "rdma.exporter.collector.duration", "s"},
      {"rdma_exporter_collections_total", MetricType::Counter, "rdma.exporter.collections", "1"},
      {"rdma_exporter_http_requests_total", MetricType::Counter, "rdma.exporter.http.requests",
       "1"},
      {"rdma_exporter_otlp_last_success_timestamp_seconds", MetricType::Gauge,
       "rdma.exporter.otlp.last_success_timestamp", "s"},
      {"rdma_exporter_build_info", MetricType::Gauge, "rdma.exporter.build_info", "1"},
      {"rdma_exporter_probe_latency_seconds", MetricType::Histogram, "rdma.exporter.probe_latency",
       "s"},
      // _total only leaves counters; a suffix is kept when nothing else is left.
      {"rdma_port_errors_total", MetricType::Gauge, "rdma.port.errors_total", "1"},
      {"rdma_port_total", MetricType::Counter, "rdma.port.total", "1"},
      {"rdma_port_bytes", MetricType::Gauge, "rdma.port.bytes", "1"},
      {"rdma_port_", MetricType::Gauge, "rdma.port_", "1"},
      // Outside the known prefixes: only suffixes change.
      {"node_network_receive_bytes_total", MetricType::Counter, "node_network_receive", "By"},
  };
  for (const auto& c : cases) {
    const OtlpMetricName got = otlp_metric_name(c.prometheus, c.type);
    EXPECT_EQ(got.name, c.name) << c.prometheus;
    EXPECT_EQ(got.unit, c.unit) << c.prometheus;
  }
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

MetricType type_by_name(const std::string& name) {
  return name.ends_with("_total") ? MetricType::Counter : MetricType::Gauge;
}

// Every metric the reference names maps to a distinct OTLP name.
TEST(OtlpNaming, DocumentedMetricsMapToDistinctNames) {
  const std::string doc = read_text(RDMA_EXPORTER_SOURCE_DIR "/docs/metrics.md");
  std::set<std::string> prometheus;
  const std::regex name(R"(`(rdma_[A-Za-z0-9_]+)`)");
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), name); it != std::sregex_iterator();
       ++it) {
    prometheus.insert((*it)[1]);
  }
  ASSERT_GT(prometheus.size(), 30u);
  std::map<std::string, std::string> seen;
  for (const auto& p : prometheus) {
    const std::string otlp = otlp_metric_name(p, type_by_name(p)).name;
    auto [it, inserted] = seen.emplace(otlp, p);
    EXPECT_TRUE(inserted) << p << " and " << it->second << " both map to " << otlp;
  }
}

// The table in docs/metrics.md says what the function does.
TEST(OtlpNaming, DocumentedTableMatchesTheFunction) {
  const std::string doc = read_text(RDMA_EXPORTER_SOURCE_DIR "/docs/metrics.md");
  const std::regex row(
      R"(\| `(rdma_[A-Za-z0-9_]+)` \| (\w+) \| `([A-Za-z0-9_.]+)` \| `([^`]+)` \|)");
  int rows = 0;
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator();
       ++it) {
    const std::string kind = (*it)[2];
    const MetricType type = kind == "counter"     ? MetricType::Counter
                            : kind == "histogram" ? MetricType::Histogram
                                                  : MetricType::Gauge;
    const OtlpMetricName got = otlp_metric_name((*it)[1].str(), type);
    EXPECT_EQ(got.name, (*it)[3]) << (*it)[1];
    EXPECT_EQ(got.unit, (*it)[4]) << (*it)[1];
    ++rows;
  }
  EXPECT_GE(rows, 10);
}

// ------------------------------------------------- a protobuf reader

struct PbField {
  uint32_t number = 0;
  int wire = -1;
  uint64_t scalar = 0;     // varint, fixed64, fixed32
  std::string_view bytes;  // length-delimited
};

bool read_varint(std::string_view& in, uint64_t& out) {
  out = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (in.empty()) return false;
    const auto b = static_cast<unsigned char>(in.front());
    in.remove_prefix(1);
    out |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

uint64_t read_le(std::string_view in, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

// Every field of a message; a malformed message fails the test.
std::vector<PbField> pb_fields(std::string_view in) {
  std::vector<PbField> out;
  while (!in.empty()) {
    uint64_t key = 0;
    if (!read_varint(in, key)) {
      ADD_FAILURE() << "truncated key";
      return out;
    }
    PbField f;
    f.number = static_cast<uint32_t>(key >> 3);
    f.wire = static_cast<int>(key & 7);
    if (f.wire == 0) {
      if (!read_varint(in, f.scalar)) ADD_FAILURE() << "truncated varint";
    } else if (f.wire == 1 || f.wire == 5) {
      const std::size_t n = f.wire == 1 ? 8 : 4;
      if (in.size() < n) {
        ADD_FAILURE() << "truncated fixed";
        return out;
      }
      f.scalar = read_le(in, static_cast<int>(n));
      in.remove_prefix(n);
    } else if (f.wire == 2) {
      uint64_t len = 0;
      if (!read_varint(in, len) || len > in.size()) {
        ADD_FAILURE() << "bad length";
        return out;
      }
      f.bytes = in.substr(0, len);
      in.remove_prefix(len);
    } else {
      ADD_FAILURE() << "unexpected wire type " << f.wire;
      return out;
    }
    out.push_back(f);
  }
  return out;
}

std::vector<PbField> pb_all(std::string_view msg, uint32_t number) {
  std::vector<PbField> out;
  for (const auto& f : pb_fields(msg)) {
    if (f.number == number) out.push_back(f);
  }
  return out;
}

// The one field `number` with wire type `wire`; a default field when absent.
PbField pb_one(std::string_view msg, uint32_t number, int wire) {
  const auto all = pb_all(msg, number);
  EXPECT_EQ(all.size(), 1u) << "field " << number;
  if (all.size() != 1) return {};
  EXPECT_EQ(all[0].wire, wire) << "field " << number;
  return all[0];
}

bool pb_has(std::string_view msg, uint32_t number) {
  return !pb_all(msg, number).empty();
}

double as_double(uint64_t bits) {
  return std::bit_cast<double>(bits);
}

// KeyValue list (string values only) -> map.
std::map<std::string, std::string> pb_attributes(std::string_view msg, uint32_t number) {
  std::map<std::string, std::string> out;
  for (const auto& kv : pb_all(msg, number)) {
    EXPECT_EQ(kv.wire, 2);
    const std::string key(pb_one(kv.bytes, 1, 2).bytes);
    const auto any = pb_one(kv.bytes, 2, 2).bytes;
    out[key] = std::string(pb_one(any, 1, 2).bytes);  // AnyValue.string_value
  }
  return out;
}

// ------------------------------------------------------- a JSON reader

struct Json;
using JsonObject = std::map<std::string, Json>;
using JsonArray = std::vector<Json>;
struct Json {
  std::variant<std::nullptr_t, bool, double, std::string, JsonArray, JsonObject> v;
  const Json& operator[](const std::string& k) const {
    static const Json missing;
    if (!std::holds_alternative<JsonObject>(v)) return missing;
    const auto& o = std::get<JsonObject>(v);
    auto it = o.find(k);
    return it == o.end() ? missing : it->second;
  }
  const Json& operator[](std::size_t i) const {
    static const Json missing;
    if (!std::holds_alternative<JsonArray>(v)) return missing;
    const auto& a = std::get<JsonArray>(v);
    return i < a.size() ? a[i] : missing;
  }
  std::size_t size() const {
    if (const auto* a = std::get_if<JsonArray>(&v)) return a->size();
    if (const auto* o = std::get_if<JsonObject>(&v)) return o->size();
    return 0;
  }
  bool has(const std::string& k) const {
    const auto* o = std::get_if<JsonObject>(&v);
    return o != nullptr && o->count(k) != 0;
  }
  std::string str() const {
    const auto* s = std::get_if<std::string>(&v);
    return s ? *s : "<not a string>";
  }
  double num() const {
    const auto* d = std::get_if<double>(&v);
    return d ? *d : std::nan("");
  }
  bool boolean() const {
    const auto* b = std::get_if<bool>(&v);
    return b != nullptr && *b;
  }
};

// A strict RFC 8259 parser: any syntax error fails the test.
class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : s_(text) {}
  Json parse() {
    Json j = value();
    ws();
    if (i_ != s_.size()) fail("trailing text");
    return j;
  }

 private:
  void fail(const std::string& what) {
    if (!failed_) ADD_FAILURE() << "JSON: " << what << " at offset " << i_;
    failed_ = true;
    i_ = s_.size();
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r'))
      ++i_;
  }
  bool eat(char c) {
    ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  Json value() {
    ws();
    if (i_ >= s_.size()) {
      fail("unexpected end");
      return {};
    }
    const char c = s_[i_];
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return Json{string()};
    if (s_.substr(i_, 4) == "true") return i_ += 4, Json{true};
    if (s_.substr(i_, 5) == "false") return i_ += 5, Json{false};
    if (s_.substr(i_, 4) == "null") return i_ += 4, Json{nullptr};
    return number();
  }
  Json object() {
    ++i_;
    JsonObject o;
    if (eat('}')) return Json{o};
    do {
      ws();
      if (i_ >= s_.size() || s_[i_] != '"') {
        fail("expected a key");
        return {};
      }
      std::string k = string();
      if (!eat(':')) fail("expected :");
      if (o.count(k)) fail("duplicate key " + k);
      o[k] = value();
    } while (eat(','));
    if (!eat('}')) fail("expected }");
    return Json{o};
  }
  Json array() {
    ++i_;
    JsonArray a;
    if (eat(']')) return Json{a};
    do {
      a.push_back(value());
    } while (eat(','));
    if (!eat(']')) fail("expected ]");
    return Json{a};
  }
  std::string string() {
    ++i_;
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c < 0x20) {
        fail("raw control character in a string");
        return out;
      }
      if (c != '\\') {
        out.push_back(s_[i_++]);
        continue;
      }
      if (++i_ >= s_.size()) break;
      const char e = s_[i_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out.push_back(e);
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'u': {
          if (i_ + 4 > s_.size()) return fail("short \\u"), out;
          const unsigned cp = std::stoul(std::string(s_.substr(i_, 4)), nullptr, 16);
          i_ += 4;
          if (cp >= 0x80) return fail("test reader handles only ASCII \\u escapes"), out;
          out.push_back(static_cast<char>(cp));
          break;
        }
        default:
          fail("bad escape");
          return out;
      }
    }
    if (i_ >= s_.size()) fail("unterminated string");
    ++i_;
    return out;
  }
  Json number() {
    static const std::regex re(R"(-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?)");
    std::cmatch m;
    const char* begin = s_.data() + i_;
    if (!std::regex_search(begin, s_.data() + s_.size(), m, re,
                           std::regex_constants::match_continuous)) {
      fail("bad value");
      return {};
    }
    i_ += m.length(0);
    return Json{std::stod(m.str(0))};
  }

  std::string_view s_;
  std::size_t i_ = 0;
  bool failed_ = false;
};

Json parse_json(std::string_view text) {
  return JsonParser(text).parse();
}

// -------------------------------------------------------- test families

OtlpEncodeContext test_context() {
  OtlpEncodeContext c;
  c.resource_attributes = {{"service.name", "rdma_exporter"}, {"host.name", "node7"}};
  c.scope_version = "0.1.0";
  c.start_time_unix_nano = 1'700'000'000'000'000'000ULL;
  c.time_unix_nano = 1'700'000'060'123'456'789ULL;
  return c;
}

prometheus::MetricFamily histogram_family() {
  prometheus::MetricFamily f{
      "rdma_exporter_probe_latency_seconds", "Probe latency.", MetricType::Histogram, {}};
  prometheus::ClientMetric m;
  m.label = {{"device", "mlx5_0"}};
  m.histogram.sample_count = 10;
  m.histogram.sample_sum = 0.0375;
  m.histogram.bucket = {{2, 0.001}, {7, 0.005}, {9, 0.01}, {10, INFINITY}};
  f.metric.push_back(m);
  return f;
}

std::vector<prometheus::MetricFamily> test_families() {
  MetricSink sink;
  sink.counter("rdma_port_hw_rcvd_pkts_total", "Received packets.",
               {{"device", "rxe0"}, {"port", "1"}}, 123456789012.0);
  sink.gauge("rdma_exporter_collector_duration_seconds", "Duration.", {{"collector", "sysfs"}},
             0.5);
  sink.info("rdma_device_info", "Identity.", {{"device", "rxe0"}, {"fw_version", ""}});
  sink.family(histogram_family());
  sink.gauge("rdma_port_rate_bytes_per_second", "", {{"device", "rxe0"}, {"port", "1"}}, 12.5e9);
  return sink.take();
}

// ------------------------------------------------------------- protobuf

struct DecodedRequest {
  std::shared_ptr<const std::string> body;  // the views below point into it
  std::map<std::string, std::string> resource;
  std::string scope_name;
  std::string scope_version;
  std::map<std::string, std::string_view> metrics;  // name -> Metric message
};

DecodedRequest decode_request(std::string bytes) {
  DecodedRequest d;
  d.body = std::make_shared<const std::string>(std::move(bytes));
  const std::string_view body = *d.body;
  const auto rm = pb_one(body, 1, 2).bytes;  // ExportMetricsServiceRequest.resource_metrics
  d.resource = pb_attributes(pb_one(rm, 1, 2).bytes, 1);
  const auto sm = pb_one(rm, 2, 2).bytes;  // ResourceMetrics.scope_metrics
  const auto scope = pb_one(sm, 1, 2).bytes;
  d.scope_name = std::string(pb_one(scope, 1, 2).bytes);
  d.scope_version = std::string(pb_one(scope, 2, 2).bytes);
  for (const auto& m : pb_all(sm, 2)) {
    EXPECT_EQ(m.wire, 2);
    d.metrics[std::string(pb_one(m.bytes, 1, 2).bytes)] = m.bytes;
  }
  return d;
}

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
  const auto ctx = test_context();
  const auto d = decode_request(encode_otlp_protobuf(test_families(), ctx));
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
  EXPECT_EQ(pb_one(p, 2, 1).scalar, ctx.start_time_unix_nano);
  EXPECT_EQ(pb_one(p, 3, 1).scalar, ctx.time_unix_nano);
  EXPECT_EQ(static_cast<int64_t>(pb_one(p, 6, 1).scalar), 123456789012);  // as_int (sfixed64)
  EXPECT_FALSE(pb_has(p, 4));
  const auto attrs = pb_attributes(p, 7);
  EXPECT_EQ(attrs, (std::map<std::string, std::string>{{"device", "rxe0"}, {"port", "1"}}));
}

TEST(OtlpProtobuf, GaugeAndInfo) {
  const auto ctx = test_context();
  const auto d = decode_request(encode_otlp_protobuf(test_families(), ctx));

  const auto duration = d.metrics.at("rdma.exporter.collector.duration");
  EXPECT_EQ(pb_one(duration, 3, 2).bytes, "s");
  EXPECT_FALSE(pb_has(duration, 7));
  const auto p = pb_one(pb_one(duration, 5, 2).bytes, 1, 2).bytes;
  EXPECT_FALSE(pb_has(p, 2));  // gauges carry no start time
  EXPECT_EQ(pb_one(p, 3, 1).scalar, ctx.time_unix_nano);
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
  const auto ctx = test_context();
  const auto d = decode_request(encode_otlp_protobuf(test_families(), ctx));
  const auto metric = d.metrics.at("rdma.exporter.probe_latency");
  EXPECT_EQ(pb_one(metric, 3, 2).bytes, "s");
  const auto h = pb_one(metric, 9, 2).bytes;
  EXPECT_EQ(pb_one(h, 2, 0).scalar, 2u);
  const auto p = pb_one(h, 1, 2).bytes;
  EXPECT_EQ(pb_one(p, 2, 1).scalar, ctx.start_time_unix_nano);
  EXPECT_EQ(pb_one(p, 3, 1).scalar, ctx.time_unix_nano);
  EXPECT_EQ(pb_one(p, 4, 1).scalar, 10u);  // count (fixed64)
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
  prometheus::MetricFamily s{"rdma_x_seconds", "", MetricType::Summary, {}};
  prometheus::ClientMetric m;
  m.summary.sample_count = 4;
  m.summary.sample_sum = 2;
  m.summary.quantile = {{0.5, 0.25}, {0.99, 1.5}};
  s.metric.push_back(m);
  prometheus::MetricFamily empty{"rdma_y_total", "", MetricType::Counter, {}};
  const auto ctx = test_context();
  const auto d = decode_request(encode_otlp_protobuf({s, empty}, ctx));
  ASSERT_EQ(d.metrics.size(), 1u);
  const auto p = pb_one(pb_one(d.metrics.at("rdma.x"), 11, 2).bytes, 1, 2).bytes;
  EXPECT_EQ(pb_one(p, 2, 1).scalar, ctx.start_time_unix_nano);
  EXPECT_EQ(pb_one(p, 4, 1).scalar, 4u);
  EXPECT_EQ(as_double(pb_one(p, 5, 1).scalar), 2.0);
  const auto q = pb_all(p, 6);
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(as_double(pb_one(q[1].bytes, 1, 1).scalar), 0.99);
  EXPECT_EQ(as_double(pb_one(q[1].bytes, 2, 1).scalar), 1.5);
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

// ----------------------------------------------------------------- JSON

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
  const auto ctx = test_context();
  const std::string text = encode_otlp_json(test_families(), ctx);
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

TEST(OtlpUtf8, RepairsOnlyWhatIsBroken) {
  EXPECT_EQ(valid_utf8("plain"), "plain");
  EXPECT_EQ(valid_utf8("\xe2\x82\xac \xf0\x9f\x98\x80"), "\xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(valid_utf8("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");                  // overlong
  EXPECT_EQ(valid_utf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // surrogate
  EXPECT_EQ(valid_utf8("\xe2\x82"), "\xef\xbf\xbd\xef\xbf\xbd");                  // truncated
}

// ------------------------------------------------------- configuration

TEST(OtlpConfig, DefaultsAreValidAndDisabled) {
  Config c;
  EXPECT_FALSE(c.otlp.enabled);
  EXPECT_EQ(c.otlp.endpoint, "http://127.0.0.1:4318/v1/metrics");
  EXPECT_TRUE(validate_config(c).empty());
  EXPECT_TRUE(c.otlp == OtlpOptions{});  // a reload can tell whether the section changed
}

TEST(OtlpConfig, ValuesAreApplied) {
  Config c;
  const auto errors = parse_config(R"(
otlp:
  enabled: true
  endpoint: http://collector.example:4318/otlp/v1/metrics
  encoding: json
  compression: gzip
  headers: {Authorization: "Bearer abc", X-Scope-OrgID: tenant1}
  interval: 15s
  timeout: 2s
  max_backoff: 1m
  queue_size: 3
  service_name: rdma
  resource_attributes:
    deployment.environment: prod
    host.name: override
)",
                                   "t.yml", c);
  ASSERT_TRUE(errors.empty()) << errors.front();
  EXPECT_TRUE(c.otlp.enabled);
  EXPECT_FALSE(c.otlp == OtlpOptions{});
  EXPECT_EQ(c.otlp.endpoint, "http://collector.example:4318/otlp/v1/metrics");
  EXPECT_EQ(c.otlp.encoding, OtlpOptions::Encoding::json);
  EXPECT_EQ(c.otlp.compression, OtlpOptions::Compression::gzip);
  EXPECT_EQ(c.otlp.headers,
            (OtlpOptions::Pairs{{"Authorization", "Bearer abc"}, {"X-Scope-OrgID", "tenant1"}}));
  EXPECT_EQ(c.otlp.interval, std::chrono::seconds(15));
  EXPECT_EQ(c.otlp.timeout, std::chrono::seconds(2));
  EXPECT_EQ(c.otlp.max_backoff, std::chrono::minutes(1));
  EXPECT_EQ(c.otlp.queue_size, 3u);
  EXPECT_EQ(c.otlp.service_name, "rdma");
  EXPECT_EQ(c.otlp.resource_attributes,
            (OtlpOptions::Pairs{{"deployment.environment", "prod"}, {"host.name", "override"}}));
}

TEST(OtlpConfig, ProblemsNamePositionAndKey) {
  Config c;
  const auto errors = parse_config(R"(otlp:
  encoding: xml
  endpoint: https://collector:4318/v1/metrics
  interval: 0s
  timeout: soon
  queue_size: 0
  headers: {"bad header": x, Content-Type: text/plain}
  compression: br
  colour: blue
)",
                                   "t.yml", c);
  ASSERT_EQ(errors.size(), 9u);
  auto has = [&](const std::string& prefix, const std::string& text) {
    for (const auto& e : errors) {
      if (e.starts_with(prefix) && e.find(text) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("t.yml:2:13: otlp.encoding:", "expected one of protobuf, json, got \"xml\""));
  EXPECT_TRUE(has("t.yml:3:13: otlp.endpoint:", "https:// endpoints are not supported"));
  EXPECT_TRUE(has("t.yml:4:13: otlp.interval:", "must be positive"));
  EXPECT_TRUE(has("t.yml:5:12: otlp.timeout:", "expected a duration"));
  EXPECT_TRUE(has("t.yml:6:15: otlp.queue_size:", "from 1 to 1000"));
  EXPECT_TRUE(has("t.yml:7:13: otlp.headers.bad header:", "not a valid HTTP header name"));
  EXPECT_TRUE(has("t.yml:7:30: otlp.headers.Content-Type:", "set by the exporter"));
  EXPECT_TRUE(has("t.yml:8:16: otlp.compression:", "expected one of none, gzip"));
  EXPECT_TRUE(has("t.yml:9:3: otlp.colour:", "unknown key"));
  // Rejected values keep their defaults.
  EXPECT_EQ(c.otlp.endpoint, "http://127.0.0.1:4318/v1/metrics");
  EXPECT_EQ(c.otlp.interval, std::chrono::seconds(60));
}

TEST(OtlpConfig, ValidationOfValuesSetInCode) {
  OtlpOptions o;
  o.endpoint = "ftp://x";
  o.interval = std::chrono::milliseconds(0);
  o.queue_size = 0;
  o.headers = {{"X", "a\r\nInjected: 1"}};
  const auto errors = validate_otlp_options(o);
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_TRUE(errors[0].starts_with("otlp.endpoint: expected an http:// URL"));
  EXPECT_EQ(errors[1], "otlp.interval: must be positive");
  EXPECT_TRUE(errors[2].starts_with("otlp.queue_size"));
  EXPECT_TRUE(errors[3].find("control character") != std::string::npos);
}

TEST(OtlpEndpointUrl, Parts) {
  OtlpEndpoint e;
  ASSERT_EQ(parse_otlp_endpoint("http://127.0.0.1:4318/v1/metrics", e), "");
  EXPECT_EQ(e.host, "127.0.0.1");
  EXPECT_EQ(e.port, 4318);
  EXPECT_EQ(e.target, "/v1/metrics");
  EXPECT_EQ(e.host_header, "127.0.0.1:4318");
  ASSERT_EQ(parse_otlp_endpoint("HTTP://collector", e), "");
  EXPECT_EQ(e.port, 80);
  EXPECT_EQ(e.target, "/v1/metrics");
  ASSERT_EQ(parse_otlp_endpoint("http://[::1]:9/custom?tenant=a", e), "");
  EXPECT_EQ(e.host, "::1");
  EXPECT_EQ(e.port, 9);
  EXPECT_EQ(e.target, "/custom?tenant=a");
  EXPECT_EQ(e.host_header, "[::1]:9");
  ASSERT_EQ(parse_otlp_endpoint("http://c:4318?x=1", e), "");
  EXPECT_EQ(e.target, "/v1/metrics?x=1");

  EXPECT_NE(otlp_endpoint_problem("https://c/v1/metrics").find("not supported"), std::string::npos);
  for (const char* bad : {"", "c:4318", "http://", "http://:4318/", "http://c:0/",
                          "http://c:65536/", "http://c:x/", "http://c:/", "http://u:p@c/",
                          "http://c/#frag", "http://c/a b", "http://[::1/", "http://[::1]x/"}) {
    EXPECT_NE(otlp_endpoint_problem(bad), "") << bad;
  }
}

// ---------------------------------------------------------------- pusher

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

// An HTTP receiver on 127.0.0.1 that records requests and answers as the
// test says: a status (with an optional Retry-After), or no answer at all.
class FakeReceiver {
 public:
  struct Answer {
    unsigned status = 200;
    std::string retry_after;
    bool hang = false;
  };
  struct Request {
    std::string target;
    std::map<std::string, std::string> headers;
    std::string body;
    std::chrono::steady_clock::time_point at;
  };

  FakeReceiver() : acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] { accept_loop(); });
  }
  ~FakeReceiver() {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    changed_.notify_all();
    beast::error_code ignored;
    // A connection unblocks accept(); then every handler sees closing_.
    asio::ip::tcp::socket poke(io_);
    poke.connect(acceptor_.local_endpoint(), ignored);
    thread_.join();
    for (auto& t : handlers_) t.join();
  }

  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + "/v1/metrics";
  }
  // Answers for the next requests, in order; `then` after they are used up.
  void script(std::vector<Answer> first, Answer then) {
    std::lock_guard lock(mutex_);
    script_ = std::move(first);
    then_ = then;
  }
  std::vector<Request> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  bool wait_for_requests(std::size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
  }

 private:
  void accept_loop() {
    for (;;) {
      asio::ip::tcp::socket socket(io_);
      beast::error_code ec;
      acceptor_.accept(socket, ec);
      std::lock_guard lock(mutex_);
      if (closing_) return;
      if (ec) continue;
      handlers_.emplace_back([this, s = std::move(socket)]() mutable { handle(std::move(s)); });
    }
  }

  void handle(asio::ip::tcp::socket socket) {
    beast::flat_buffer buffer;
    http::request<http::string_body> req;
    beast::error_code ec;
    http::read(socket, buffer, req, ec);
    if (ec) return;
    Answer answer;
    {
      std::lock_guard lock(mutex_);
      Request r{std::string(req.target()), {}, req.body(), std::chrono::steady_clock::now()};
      for (const auto& f : req) r.headers[std::string(f.name_string())] = std::string(f.value());
      requests_.push_back(std::move(r));
      if (!script_.empty()) {
        answer = script_.front();
        script_.erase(script_.begin());
      } else {
        answer = then_;
      }
    }
    changed_.notify_all();
    if (answer.hang) {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return closing_; });
      return;
    }
    http::response<http::string_body> res{static_cast<http::status>(answer.status), 11};
    if (!answer.retry_after.empty()) res.set(http::field::retry_after, answer.retry_after);
    res.body() = answer.status == 200 ? "" : "rejected for the test";
    res.prepare_payload();
    http::write(socket, res, ec);
  }

  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  std::thread thread_;
  std::vector<std::thread> handlers_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool closing_ = false;
  std::vector<Answer> script_;
  Answer then_;
  std::vector<Request> requests_;
};

// A fresh collection for every fetch, as the cache gives one.
std::shared_ptr<const Snapshot> fresh_snapshot() {
  auto s = std::make_shared<Snapshot>();
  MetricSink sink;
  sink.counter("rdma_port_hw_rcvd_pkts_total", "Received packets.",
               {{"device", "rxe0"}, {"port", "1"}}, 42);
  s->families = sink.take();
  s->taken = std::chrono::steady_clock::now();
  return s;
}

OtlpOptions fast_options(const FakeReceiver& receiver) {
  OtlpOptions o;
  o.enabled = true;
  o.endpoint = receiver.url();
  o.interval = std::chrono::milliseconds(100);
  o.timeout = std::chrono::milliseconds(2000);
  o.resource_attributes = {{"team", "fabric"}, {"service.name", "rdma-prod"}};
  return o;
}

Snapshot self_metrics(const OtlpPusher& pusher) {
  MetricSink sink;
  pusher.add_metrics(sink);
  Snapshot s;
  s.families = sink.take();
  return s;
}

double exports(const OtlpPusher& p, const std::string& result) {
  return testing::sample(self_metrics(p), "rdma_exporter_otlp_exports_total", {{"result", result}});
}

TEST(OtlpPusher, PushesDecodablePayloadsWithAConstantStartTime) {
  FakeReceiver receiver;
  OtlpPusher pusher(fast_options(receiver), fresh_snapshot);
  // Before start every self metric is there, at zero.
  EXPECT_EQ(exports(pusher, "success"), 0);
  EXPECT_EQ(
      testing::sample(self_metrics(pusher), "rdma_exporter_otlp_last_success_timestamp_seconds"),
      0);
  pusher.start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (exports(pusher, "success") < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pusher.stop();

  const auto requests = receiver.requests();
  ASSERT_GE(requests.size(), 3u);
  uint64_t start = 0;
  uint64_t last_time = 0;
  for (const auto& r : requests) {
    EXPECT_EQ(r.target, "/v1/metrics");
    EXPECT_EQ(r.headers.at("Content-Type"), "application/x-protobuf");
    EXPECT_TRUE(r.headers.at("User-Agent").starts_with("rdma_exporter/"));
    const auto d = decode_request(r.body);
    EXPECT_EQ(d.resource.at("service.name"), "rdma-prod");  // user attributes override
    EXPECT_EQ(d.resource.at("team"), "fabric");
    EXPECT_FALSE(d.resource.at("host.name").empty());
    const auto p = pb_one(pb_one(d.metrics.at("rdma.port.hw.rcvd_pkts"), 7, 2).bytes, 1, 2).bytes;
    EXPECT_EQ(pb_one(p, 6, 1).scalar, 42u);
    const uint64_t s = pb_one(p, 2, 1).scalar;
    const uint64_t t = pb_one(p, 3, 1).scalar;
    if (start == 0) start = s;
    EXPECT_EQ(s, start);
    EXPECT_LT(s, t);
    EXPECT_GT(t, last_time);
    last_time = t;
  }
  // Every request was answered 200; the last may have been cut short by stop().
  EXPECT_GE(exports(pusher, "success"), 3);
  EXPECT_LE(exports(pusher, "success"), static_cast<double>(requests.size()));
  EXPECT_EQ(exports(pusher, "network_error"), 0);
  const double last =
      testing::sample(self_metrics(pusher), "rdma_exporter_otlp_last_success_timestamp_seconds");
  EXPECT_NEAR(last, static_cast<double>(std::time(nullptr)), 10);
}

TEST(OtlpPusher, StartTimeIsTheProcessStart) {
  const uint64_t start = process_start_time_unix_nano();
  const uint64_t now =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
  EXPECT_LT(start, now);
  EXPECT_GT(start, now - 3600ULL * 1'000'000'000ULL);  // this test binary is young
  // The same on every call: it is the start of every cumulative series.
  EXPECT_NEAR(static_cast<double>(process_start_time_unix_nano()), static_cast<double>(start), 1e6);
}

TEST(OtlpPusher, JsonAndGzipHeaders) {
  FakeReceiver receiver;
  OtlpOptions o = fast_options(receiver);
  o.encoding = OtlpOptions::Encoding::json;
  o.compression = OtlpOptions::Compression::gzip;
  o.headers = {{"X-Scope-OrgID", "tenant1"}};
  OtlpPusher pusher(o, fresh_snapshot);
  pusher.start();
  ASSERT_TRUE(receiver.wait_for_requests(1, std::chrono::seconds(10)));
  pusher.stop();
  const auto r = receiver.requests().front();
  EXPECT_EQ(r.headers.at("Content-Type"), "application/json");
  EXPECT_EQ(r.headers.at("Content-Encoding"), "gzip");
  EXPECT_EQ(r.headers.at("X-Scope-OrgID"), "tenant1");
  ASSERT_GE(r.body.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(r.body[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(r.body[1]), 0x8b);
}

TEST(OtlpPusher, RetriesAfterRetryAfterThenSucceeds) {
  FakeReceiver receiver;
  receiver.script({{503, "1", false}, {429, "", false}}, {});
  OtlpOptions o = fast_options(receiver);
  o.interval = std::chrono::seconds(30);  // one payload: every request is a retry of it
  OtlpPusher pusher(o, fresh_snapshot);
  pusher.start();
  ASSERT_TRUE(receiver.wait_for_requests(3, std::chrono::seconds(10)));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (exports(pusher, "success") < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pusher.stop();
  const auto r = receiver.requests();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].body, r[1].body);  // the same payload again
  EXPECT_EQ(r[1].body, r[2].body);
  // Retry-After: 1 is honoured; after the 429 the backoff is 1-2 s with jitter.
  EXPECT_GE(r[1].at - r[0].at, std::chrono::milliseconds(950));
  EXPECT_GE(r[2].at - r[1].at, std::chrono::milliseconds(450));
  EXPECT_EQ(exports(pusher, "retryable_error"), 2);
  EXPECT_EQ(exports(pusher, "success"), 1);
  EXPECT_EQ(testing::sample(self_metrics(pusher), "rdma_exporter_otlp_queue_length"), 0);
}

TEST(OtlpPusher, RetryAfterIsCappedByMaxBackoff) {
  FakeReceiver receiver;
  receiver.script({{503, "3600", false}}, {});
  OtlpOptions o = fast_options(receiver);
  o.interval = std::chrono::seconds(30);
  o.max_backoff = std::chrono::milliseconds(300);
  OtlpPusher pusher(o, fresh_snapshot);
  pusher.start();
  ASSERT_TRUE(receiver.wait_for_requests(2, std::chrono::seconds(5)));
  pusher.stop();
}

TEST(OtlpPusher, RetryAfterZeroStillBacksOff) {
  FakeReceiver receiver;
  receiver.script({{503, "0", false}}, {});
  OtlpOptions o = fast_options(receiver);
  o.interval = std::chrono::seconds(30);
  OtlpPusher pusher(o, fresh_snapshot);
  pusher.start();
  ASSERT_TRUE(receiver.wait_for_requests(2, std::chrono::seconds(5)));
  pusher.stop();
  const auto r = receiver.requests();
  EXPECT_GE(r[1].at - r[0].at, std::chrono::milliseconds(450));
}

TEST(OtlpPusher, PermanentErrorsDropThePayloadWithoutRetrying) {
  FakeReceiver receiver;
  receiver.script({}, {400, "", false});
  OtlpOptions o = fast_options(receiver);
  o.interval = std::chrono::milliseconds(200);
  OtlpPusher pusher(o, fresh_snapshot);
  pusher.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  pusher.stop();
  const auto n = receiver.requests().size();
  EXPECT_GE(n, 3u);
  EXPECT_LE(n, 7u);  // one per collection, no retries
  EXPECT_EQ(exports(pusher, "permanent_error"), static_cast<double>(n));
  EXPECT_EQ(exports(pusher, "retryable_error"), 0);
  EXPECT_EQ(testing::sample(self_metrics(pusher), "rdma_exporter_otlp_queue_length"), 0);
}

TEST(OtlpPusher, HangingReceiverBoundsTheQueueAndStopIsPrompt) {
  FakeReceiver receiver;
  receiver.script({}, {0, "", true});
  OtlpOptions o = fast_options(receiver);
  o.interval = std::chrono::milliseconds(50);
  o.timeout = std::chrono::milliseconds(300);
  o.max_backoff = std::chrono::milliseconds(100);
  o.queue_size = 2;
  OtlpPusher pusher(o, fresh_snapshot);
  pusher.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const Snapshot m = self_metrics(pusher);
  EXPECT_LE(testing::sample(m, "rdma_exporter_otlp_queue_length"), 2);
  EXPECT_GE(testing::sample(m, "rdma_exporter_otlp_dropped_total"), 1);
  EXPECT_GE(testing::sample(m, "rdma_exporter_otlp_exports_total", {{"result", "network_error"}}),
            2);

  // A request in flight with a long timeout does not delay stop().
  FakeReceiver slow;
  slow.script({}, {0, "", true});
  OtlpOptions so = fast_options(slow);
  so.timeout = std::chrono::seconds(30);
  OtlpPusher stuck(so, fresh_snapshot);
  stuck.start();
  ASSERT_TRUE(slow.wait_for_requests(1, std::chrono::seconds(5)));
  const auto before = std::chrono::steady_clock::now();
  stuck.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::milliseconds(500));
  pusher.stop();
}

TEST(OtlpPusher, AbsentReceiverCountsNetworkErrors) {
  // A port nobody listens on: bind one, note it, close it.
  unsigned short port = 0;
  {
    asio::io_context io;
    asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
    port = a.local_endpoint().port();
  }
  OtlpOptions o;
  o.endpoint = "http://127.0.0.1:" + std::to_string(port) + "/v1/metrics";
  o.interval = std::chrono::milliseconds(100);
  o.max_backoff = std::chrono::milliseconds(100);
  OtlpPusher pusher(o, fresh_snapshot);
  pusher.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  pusher.stop();
  EXPECT_GE(exports(pusher, "network_error"), 2);
  EXPECT_EQ(exports(pusher, "success"), 0);
}

TEST(OtlpPusher, NothingToSendWithoutASnapshot) {
  FakeReceiver receiver;
  std::atomic<int> fetches{0};
  auto same = fresh_snapshot();
  OtlpPusher pusher(fast_options(receiver), [&]() -> std::shared_ptr<const Snapshot> {
    const int n = ++fetches;
    if (n == 1) return nullptr;
    if (n == 2) return std::make_shared<Snapshot>();  // no families
    return same;  // the same collection again and again: sent once
  });
  pusher.start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (fetches < 6 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  receiver.wait_for_requests(1, std::chrono::seconds(2));
  pusher.stop();
  EXPECT_GE(fetches.load(), 6);
  EXPECT_EQ(receiver.requests().size(), 1u);
}

}  // namespace
}  // namespace rdma_exporter
