// The `otlp` configuration section and the endpoint URL.

#include "exporter/otlp/options.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "exporter/config.hpp"

namespace rdma_exporter {
namespace {

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
  endpoint: ftp://collector:4318/v1/metrics
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
  EXPECT_TRUE(has("t.yml:3:13: otlp.endpoint:", "expected an http:// or https:// URL"));
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

TEST(OtlpConfig, TlsFiles) {
  Config c;
  auto errors = parse_config(R"(
otlp:
  endpoint: https://collector.example:4318/v1/metrics
  ca_file: /etc/rdma_exporter/ca.pem
  cert_file: /etc/rdma_exporter/client.pem
  key_file: /etc/rdma_exporter/client.key
)",
                             "t.yml", c);
  ASSERT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(c.otlp.ca_file, "/etc/rdma_exporter/ca.pem");
  EXPECT_EQ(c.otlp.cert_file, "/etc/rdma_exporter/client.pem");
  EXPECT_EQ(c.otlp.key_file, "/etc/rdma_exporter/client.key");

  // A client certificate needs its key, and the other way round.
  Config half;
  errors = parse_config("otlp: {cert_file: /c.pem}\n", "t.yml", half);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0],
            "t.yml: otlp.cert_file: set without otlp.key_file (a client certificate needs both)");
  Config other_half;
  errors = parse_config("otlp: {key_file: /c.key}\n", "t.yml", other_half);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0],
            "t.yml: otlp.key_file: set without otlp.cert_file (a client certificate needs both)");
}

TEST(OtlpConfig, FileMappingsMergeOverWhatIsThere) {
  Config c;
  c.otlp.headers = {{"authorization", "from env"}, {"X-Env", "1"}};
  c.otlp.resource_attributes = {{"k8s.pod.name", "p"}, {"team", "env"}};
  const auto errors = parse_config(R"(
otlp:
  headers: {Authorization: from file}
  resource_attributes: {team: file, rack: r1}
)",
                                   "t.yml", c);
  ASSERT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(c.otlp.headers, (OtlpOptions::Pairs{{"Authorization", "from file"}, {"X-Env", "1"}}));
  EXPECT_EQ(c.otlp.resource_attributes,
            (OtlpOptions::Pairs{{"k8s.pod.name", "p"}, {"team", "file"}, {"rack", "r1"}}));
}

TEST(OtlpConfig, ValidationOfValuesSetInCode) {
  OtlpOptions o;
  o.endpoint = "ftp://x";
  o.interval = std::chrono::milliseconds(0);
  o.queue_size = 0;
  o.headers = {{"X", "a\r\nInjected: 1"}};
  const auto errors = validate_otlp_options(o);
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_TRUE(errors[0].starts_with("otlp.endpoint: expected an http:// or https:// URL"));
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

  EXPECT_FALSE(e.tls);

  // https://: TLS, port 443 unless given.
  ASSERT_EQ(parse_otlp_endpoint("https://collector.example/v1/metrics", e), "");
  EXPECT_TRUE(e.tls);
  EXPECT_EQ(e.host, "collector.example");
  EXPECT_EQ(e.port, 443);
  EXPECT_EQ(e.target, "/v1/metrics");
  EXPECT_EQ(e.host_header, "collector.example");
  ASSERT_EQ(parse_otlp_endpoint("HTTPS://[::1]:4318", e), "");
  EXPECT_TRUE(e.tls);
  EXPECT_EQ(e.host, "::1");
  EXPECT_EQ(e.port, 4318);
  EXPECT_EQ(e.target, "/v1/metrics");

  for (const char* bad : {"", "c:4318", "http://", "http://:4318/", "http://c:0/",
                          "http://c:65536/", "http://c:x/", "http://c:/", "http://u:p@c/",
                          "http://c/#frag", "http://c/a b", "http://[::1/", "http://[::1]x/"}) {
    EXPECT_NE(otlp_endpoint_problem(bad), "") << bad;
  }
}

}  // namespace
}  // namespace rdma_exporter
