// The OpenTelemetry standard environment variables (OTEL_EXPORTER_OTLP_*,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME, OTEL_METRIC_EXPORT_INTERVAL):
// hand-written environments and the options the specification says they
// give (opentelemetry-specification, protocol/exporter.md and
// configuration/sdk-environment-variables.md).

#include "exporter/otlp/environment.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>

#include "common/text.hpp"
#include "exporter/config.hpp"
#include "exporter/otlp/options.hpp"

namespace rdma_exporter {
namespace {

using Env = std::map<std::string, std::string>;
using std::chrono::milliseconds;

EnvLookup lookup(const Env& env) {
  return [env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

// The options the environment gives over the defaults, and its problems.
struct Applied {
  OtlpOptions options;
  std::vector<std::string> errors;
};

Applied apply(const Env& env) {
  Applied a;
  a.errors = apply_otlp_environment(lookup(env), a.options);
  return a;
}

TEST(OtlpEnvironment, NothingSetChangesNothing) {
  const Applied a = apply({});
  EXPECT_TRUE(a.errors.empty());
  EXPECT_TRUE(a.options == OtlpOptions{});
  // Empty is unset.
  const Applied empty = apply({{"OTEL_EXPORTER_OTLP_ENDPOINT", ""},
                               {"OTEL_EXPORTER_OTLP_TIMEOUT", ""},
                               {"OTEL_SERVICE_NAME", ""}});
  EXPECT_TRUE(empty.errors.empty());
  EXPECT_TRUE(empty.options == OtlpOptions{});
}

TEST(OtlpEnvironment, GenericEndpointIsABaseUrl) {
  const std::pair<const char*, const char*> cases[] = {
      {"http://collector:4318", "http://collector:4318/v1/metrics"},
      {"http://collector:4318/", "http://collector:4318/v1/metrics"},
      {"https://collector.example/mycollector/",
       "https://collector.example/mycollector/v1/metrics"},
      {"https://collector.example/mycollector", "https://collector.example/mycollector/v1/metrics"},
      {"http://c:4318?tenant=a", "http://c:4318/v1/metrics?tenant=a"},
  };
  for (const auto& [base, want] : cases) {
    const Applied a = apply({{"OTEL_EXPORTER_OTLP_ENDPOINT", base}});
    EXPECT_TRUE(a.errors.empty()) << base;
    EXPECT_EQ(a.options.endpoint, want) << base;
    EXPECT_TRUE(a.options.enabled) << base;  // an endpoint in the environment turns push on
  }
}

TEST(OtlpEnvironment, MetricsEndpointIsUsedAsIsAndWins) {
  Applied a =
      apply({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://generic:4318"},
             {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "https://collector.example.com/v1/metrics/"}});
  EXPECT_TRUE(a.errors.empty());
  EXPECT_EQ(a.options.endpoint, "https://collector.example.com/v1/metrics/");
  EXPECT_TRUE(a.options.enabled);
  // No path: the root path, not /v1/metrics.
  a = apply({{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://collector:4318"}});
  EXPECT_EQ(a.options.endpoint, "http://collector:4318/");
  OtlpEndpoint e;
  ASSERT_EQ(parse_otlp_endpoint(a.options.endpoint, e), "");
  EXPECT_EQ(e.target, "/");
  a = apply({{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://collector:4318/custom/path"}});
  EXPECT_EQ(a.options.endpoint, "http://collector:4318/custom/path");
}

TEST(OtlpEnvironment, HeadersArePercentDecodedAndSignalSpecificReplacesGeneric) {
  Applied a = apply({{"OTEL_EXPORTER_OTLP_HEADERS",
                      " Authorization = Basic%20dXNlcjpwYXNz , X-Tenant=a%2Cb%3Dc,"}});
  ASSERT_TRUE(a.errors.empty()) << a.errors.front();
  EXPECT_EQ(a.options.headers,
            (OtlpOptions::Pairs{{"Authorization", "Basic dXNlcjpwYXNz"}, {"X-Tenant", "a,b=c"}}));
  // '+' is not a space in percent-encoding.
  a = apply({{"OTEL_EXPORTER_OTLP_HEADERS", "X-A=1+1"}});
  EXPECT_EQ(a.options.headers, (OtlpOptions::Pairs{{"X-A", "1+1"}}));

  a = apply({{"OTEL_EXPORTER_OTLP_HEADERS", "X-Generic=1,X-Both=generic"},
             {"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "X-Both=metrics"}});
  ASSERT_TRUE(a.errors.empty());
  EXPECT_EQ(a.options.headers, (OtlpOptions::Pairs{{"X-Both", "metrics"}}));
}

TEST(OtlpEnvironment, TimeoutIsMillisecondsAndZeroIsNoLimit) {
  Applied a = apply({{"OTEL_EXPORTER_OTLP_TIMEOUT", "2500"}});
  ASSERT_TRUE(a.errors.empty());
  EXPECT_EQ(a.options.timeout, milliseconds(2500));
  a = apply(
      {{"OTEL_EXPORTER_OTLP_TIMEOUT", "2500"}, {"OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "700"}});
  EXPECT_EQ(a.options.timeout, milliseconds(700));
  a = apply({{"OTEL_EXPORTER_OTLP_TIMEOUT", "0"}});
  ASSERT_TRUE(a.errors.empty());
  EXPECT_EQ(a.options.timeout, milliseconds(2147483647));
}

TEST(OtlpEnvironment, ProtocolCompressionAndInterval) {
  Applied a = apply({{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"},
                     {"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "HTTP/JSON"},
                     {"OTEL_EXPORTER_OTLP_COMPRESSION", "Gzip"},
                     {"OTEL_METRIC_EXPORT_INTERVAL", "15000"}});
  ASSERT_TRUE(a.errors.empty()) << a.errors.front();
  EXPECT_EQ(a.options.encoding, OtlpOptions::Encoding::json);
  EXPECT_EQ(a.options.compression, OtlpOptions::Compression::gzip);
  EXPECT_EQ(a.options.interval, milliseconds(15000));
  EXPECT_FALSE(a.options.enabled);  // no endpoint: push stays as it was

  a = apply({{"OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"},
             {"OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "none"}});
  EXPECT_EQ(a.options.compression, OtlpOptions::Compression::none);
}

TEST(OtlpEnvironment, CertificatesAreMadeAbsolute) {
  Applied a = apply({{"OTEL_EXPORTER_OTLP_CERTIFICATE", "/etc/ssl/generic.pem"},
                     {"OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE", "/etc/ssl/ca.pem"},
                     {"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "/etc/ssl/client.pem"},
                     {"OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY", "/etc/ssl/client.key"}});
  ASSERT_TRUE(a.errors.empty());
  EXPECT_EQ(a.options.ca_file, "/etc/ssl/ca.pem");
  EXPECT_EQ(a.options.cert_file, "/etc/ssl/client.pem");
  EXPECT_EQ(a.options.key_file, "/etc/ssl/client.key");

  a = apply({{"OTEL_EXPORTER_OTLP_CERTIFICATE", "certs/../ca.pem"}});
  EXPECT_EQ(a.options.ca_file,
            (std::filesystem::current_path() / "ca.pem").lexically_normal().string());
}

TEST(OtlpEnvironment, ResourceAttributesAndServiceName) {
  Applied a = apply({{"OTEL_RESOURCE_ATTRIBUTES",
                      "deployment.environment=prod,k8s.pod.name=exp%2C1,a%3Db=c%20d,"
                      "service.name=from-attributes"}});
  ASSERT_TRUE(a.errors.empty()) << a.errors.front();
  EXPECT_EQ(a.options.resource_attributes,
            (OtlpOptions::Pairs{
                {"deployment.environment", "prod"}, {"k8s.pod.name", "exp,1"}, {"a=b", "c d"}}));
  EXPECT_EQ(a.options.service_name, "from-attributes");

  // OTEL_SERVICE_NAME wins over service.name in OTEL_RESOURCE_ATTRIBUTES.
  a = apply({{"OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attributes"},
             {"OTEL_SERVICE_NAME", "rdma-fabric-a"}});
  ASSERT_TRUE(a.errors.empty());
  EXPECT_EQ(a.options.service_name, "rdma-fabric-a");
  EXPECT_TRUE(a.options.resource_attributes.empty());
}

TEST(OtlpEnvironment, MalformedValuesAreProblemsAndLeaveTheOption) {
  const Applied a = apply({
      {"OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"},
      {"OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%2"},
      {"OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "10s"},
      {"OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"},
      {"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
      {"OTEL_RESOURCE_ATTRIBUTES", "team=fabric,rack"},
      {"OTEL_METRIC_EXPORT_INTERVAL", "0"},
  });
  ASSERT_EQ(a.errors.size(), 7u);
  EXPECT_EQ(a.errors[0],
            "environment: OTEL_EXPORTER_OTLP_ENDPOINT: expected an http:// or https:// URL such "
            "as http://127.0.0.1:4318/v1/metrics, got \"collector:4318\"");
  EXPECT_EQ(a.errors[1],
            "environment: OTEL_EXPORTER_OTLP_HEADERS: the value of Authorization has a malformed "
            "percent-encoding (% must be followed by two hex digits)");
  EXPECT_EQ(a.errors[2],
            "environment: OTEL_EXPORTER_OTLP_METRICS_TIMEOUT: expected a whole number of "
            "milliseconds from 0 (no limit) to 2147483647, got \"10s\"");
  EXPECT_EQ(a.errors[3],
            "environment: OTEL_EXPORTER_OTLP_COMPRESSION: expected gzip or none, got \"zstd\"");
  EXPECT_TRUE(
      a.errors[4].starts_with("environment: OTEL_EXPORTER_OTLP_PROTOCOL: grpc is not supported"))
      << a.errors[4];
  EXPECT_EQ(a.errors[5],
            "environment: OTEL_RESOURCE_ATTRIBUTES: member 2 has no '=' (expected "
            "key=value,key2=value2)");
  EXPECT_EQ(a.errors[6],
            "environment: OTEL_METRIC_EXPORT_INTERVAL: expected a whole number of milliseconds "
            "from 1 to 2147483647, got \"0\"");
  // Nothing was taken from them.
  EXPECT_TRUE(a.options == OtlpOptions{});
}

TEST(OtlpEnvironment, MoreMalformedValues) {
  auto one = [](const Env& env) {
    const Applied a = apply(env);
    EXPECT_EQ(a.errors.size(), 1u);
    return a.errors.empty() ? std::string() : a.errors[0];
  };
  EXPECT_NE(one({{"OTEL_EXPORTER_OTLP_TIMEOUT", "-5"}}).find("got \"-5\""), std::string::npos);
  EXPECT_NE(one({{"OTEL_EXPORTER_OTLP_TIMEOUT", "2147483648"}}).find("to 2147483647"),
            std::string::npos);
  EXPECT_EQ(one({{"OTEL_EXPORTER_OTLP_HEADERS", "=x"}}),
            "environment: OTEL_EXPORTER_OTLP_HEADERS: member 1 has an empty key");
  EXPECT_EQ(one({{"OTEL_EXPORTER_OTLP_HEADERS", "bad header=x"}}),
            "environment: OTEL_EXPORTER_OTLP_HEADERS: \"bad header\" is not a valid HTTP header "
            "name");
  EXPECT_EQ(one({{"OTEL_EXPORTER_OTLP_HEADERS", "Content-Type=text/plain"}}),
            "environment: OTEL_EXPORTER_OTLP_HEADERS: header Content-Type is set by the exporter");
  // A decoded control character would split the request's header.
  EXPECT_EQ(one({{"OTEL_EXPORTER_OTLP_HEADERS", "X-A=1%0D%0AInjected: 1"}}),
            "environment: OTEL_EXPORTER_OTLP_HEADERS: the value of header X-A holds a control "
            "character");
  EXPECT_EQ(one({{"OTEL_RESOURCE_ATTRIBUTES", "a%zz=1"}}),
            "environment: OTEL_RESOURCE_ATTRIBUTES: member 1: malformed percent-encoding in the "
            "key (% must be followed by two hex digits)");
  EXPECT_EQ(one({{"OTEL_EXPORTER_OTLP_PROTOCOL", "http"}}),
            "environment: OTEL_EXPORTER_OTLP_PROTOCOL: expected http/protobuf or http/json, got "
            "\"http\"");
  EXPECT_EQ(one({{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "https://c:99999/v1/metrics"}}),
            "environment: OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: the port must be a number from 1 "
            "to 65535, got \"99999\"");
}

TEST(OtlpEnvironment, PercentDecoding) {
  std::string out;
  ASSERT_TRUE(percent_decode("a%20b%2c%2C%25", out));
  EXPECT_EQ(out, "a b,,%");
  EXPECT_FALSE(percent_decode("%", out));
  EXPECT_FALSE(percent_decode("%4", out));
  EXPECT_FALSE(percent_decode("%g0", out));
  EXPECT_FALSE(percent_decode("100%", out));
}

// The file's keys win over the environment; keys the file leaves out keep
// what the environment set; mappings merge name by name.
TEST(OtlpEnvironment, TheFileWinsOverTheEnvironment) {
  Config c;
  ASSERT_TRUE(
      apply_otlp_environment(lookup({{"OTEL_EXPORTER_OTLP_ENDPOINT", "https://env.example:4318"},
                                     {"OTEL_EXPORTER_OTLP_TIMEOUT", "3000"},
                                     {"OTEL_EXPORTER_OTLP_HEADERS", "X-Env=1,X-Both=env"},
                                     {"OTEL_RESOURCE_ATTRIBUTES", "team=env,rack=r1"},
                                     {"OTEL_SERVICE_NAME", "env-name"}}),
                             c.otlp)
          .empty());
  const auto errors = parse_config(R"(
otlp:
  endpoint: http://file.example:4318/v1/metrics
  headers: {x-both: file}
  resource_attributes: {team: file}
)",
                                   "t.yml", c);
  ASSERT_TRUE(errors.empty()) << errors.front();
  EXPECT_TRUE(c.otlp.enabled);  // from the environment's endpoint
  EXPECT_EQ(c.otlp.endpoint, "http://file.example:4318/v1/metrics");
  EXPECT_EQ(c.otlp.timeout, milliseconds(3000));
  EXPECT_EQ(c.otlp.headers, (OtlpOptions::Pairs{{"X-Env", "1"}, {"x-both", "file"}}));
  EXPECT_EQ(c.otlp.resource_attributes, (OtlpOptions::Pairs{{"team", "file"}, {"rack", "r1"}}));
  EXPECT_EQ(c.otlp.service_name, "env-name");

  // An explicit enabled: false in the file keeps push off.
  Config off;
  ASSERT_TRUE(
      apply_otlp_environment(lookup({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318"}}), off.otlp)
          .empty());
  ASSERT_TRUE(parse_config("otlp: {enabled: false}\n", "t.yml", off).empty());
  EXPECT_FALSE(off.otlp.enabled);
  EXPECT_EQ(off.otlp.endpoint, "http://env:4318/v1/metrics");
}

}  // namespace
}  // namespace rdma_exporter
