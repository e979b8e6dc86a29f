#include "exporter/http/web_config.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "exporter/http/web_security.hpp"

namespace rdma_exporter {
namespace {

constexpr const char* kPromHash = "$2y$05$KlUMDg8/hTYzyUHGYH5etOm6STmU58gR.jglXJ8vLx18GQ3bbGZBa";

// Problems of a document, joined, for EXPECT_* messages.
std::vector<std::string> problems(const std::string& yaml, WebConfig* out = nullptr) {
  WebConfig c;
  auto errors = parse_web_config(yaml, "/etc/rdma/web.yml", c);
  if (out != nullptr) *out = c;
  return errors;
}

// Expects exactly one problem that contains every needle.
void expect_one(const std::string& yaml, std::initializer_list<const char*> needles) {
  auto errors = problems(yaml);
  ASSERT_EQ(errors.size(), 1U) << yaml << "\n" << (errors.empty() ? "" : errors.front());
  for (const char* n : needles) EXPECT_NE(errors[0].find(n), std::string::npos) << errors[0];
}

TEST(WebConfig, EmptyFileMeansPlainHttpWithoutAuth) {
  WebConfig c;
  EXPECT_TRUE(problems("", &c).empty());
  EXPECT_FALSE(c.tls);
  EXPECT_TRUE(c.users.empty());
  EXPECT_TRUE(problems("tls_server_config: {}\nbasic_auth_users:\n", &c).empty());
  EXPECT_FALSE(c.tls);
}

TEST(WebConfig, BytesThatAreNotTextAreAProblemNotAnEmptyFile) {
  // yaml-cpp alone loads this as an empty document: plain HTTP, no users.
  expect_one("%\x01\x02", {"/etc/rdma/web.yml:1:2:", "character U+0001"});
  expect_one("basic_auth_users:\n  a: \xc0\x80", {"/etc/rdma/web.yml:2:6:", "byte 0xc0"});
}

TEST(WebConfig, EveryKeyIsRead) {
  WebConfig c;
  auto errors = problems(std::string(R"(
tls_server_config:
  cert_file: certs/server.pem
  key_file: /abs/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ../ca.pem
  min_version: TLS13
  max_version: TLS13
  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384]
  curve_preferences: [X25519, CurveP256]
  prefer_server_cipher_suites: false
http_server_config:
  http2: false
  headers:
    x-frame-options: DENY
    Strict-Transport-Security: max-age=31536000
    X-XSS-Protection: ""
basic_auth_users:
  prom: ")") + kPromHash + "\"\n",
                         &c);
  ASSERT_TRUE(errors.empty()) << errors.front();
  ASSERT_TRUE(c.tls);
  // Relative names are resolved against the file's directory.
  EXPECT_EQ(c.tls->cert_file, "/etc/rdma/certs/server.pem");
  EXPECT_EQ(c.tls->key_file, "/abs/server.key");
  EXPECT_EQ(c.tls->client_ca_file, "/etc/ca.pem");
  EXPECT_EQ(c.tls->client_auth, WebConfig::ClientAuth::require_and_verify);
  EXPECT_EQ(c.tls->min_version, WebConfig::TlsVersion::tls13);
  EXPECT_EQ(c.tls->cipher_suites, std::vector<std::string>{"ECDHE-RSA-AES128-GCM-SHA256"});
  EXPECT_EQ(c.tls->tls13_cipher_suites, std::vector<std::string>{"TLS_AES_256_GCM_SHA384"});
  EXPECT_EQ(c.tls->curves, (std::vector<std::string>{"X25519", "P-256"}));
  EXPECT_FALSE(c.tls->prefer_server_cipher_suites);
  EXPECT_FALSE(c.http2);
  // Canonical names; a blank value leaves the header unset.
  using Headers = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(c.headers, (Headers{{"X-Frame-Options", "DENY"},
                                {"Strict-Transport-Security", "max-age=31536000"}}));
  EXPECT_EQ(c.users.at("prom"), kPromHash);
}

TEST(WebConfig, ShippedExampleParses) {
  WebConfig c;
  auto errors = load_web_config_file(RDMA_EXPORTER_SOURCE_DIR "/config/web-config.yml", c);
  ASSERT_TRUE(errors.empty()) << errors.front();
  ASSERT_TRUE(c.tls);
  EXPECT_EQ(c.tls->cert_file, RDMA_EXPORTER_SOURCE_DIR "/config/rdma_exporter.crt");
  EXPECT_EQ(c.tls->min_version, WebConfig::TlsVersion::tls12);
  EXPECT_TRUE(c.users.empty());  // an example must not ship a usable password
}

TEST(WebConfig, ShapeProblemsNameLineColumnAndKey) {
  expect_one("tls_server_config: [\n", {"web.yml:", "(syntax)"});
  expect_one("- a\n- b\n", {"web.yml:1:1: (top level): expected a mapping"});
  expect_one("tls_server_config: {}\nbasic_auth_user: {}\n",
             {"web.yml:2:1: basic_auth_user: unknown key", "basic_auth_users"});
  expect_one("tls_server_config:\n  cert_file: a\n  key_file: b\n  certfile: c\n",
             {"web.yml:4:3: tls_server_config.certfile: unknown key", "cert_file"});
  expect_one("tls_server_config: 3\n", {"tls_server_config: expected a mapping"});
  expect_one("http_server_config: {http3: true}\n", {"http_server_config.http3: unknown key"});
  expect_one("http_server_config: {http2: maybe}\n", {"http2: expected true or false"});
  expect_one(
      "rate_limit: {interval: 1s}\n",
      {"web.yml:1:13: rate_limit.burst: must be at least 1 when rate_limit.interval is set"});
  expect_one("rate_limit: {interval: 1s, burst: 0}\n", {"rate_limit.burst: must be at least 1"});
  expect_one("rate_limit: {interval: 1s, burst: -2}\n",
             {"rate_limit.burst: expected an integer from 0 to 1000000"});
  expect_one("rate_limit: {interval: often, burst: 2}\n",
             {"rate_limit.interval: expected a duration"});
  expect_one("rate_limit: {every: 1s}\n", {"rate_limit.every: unknown key", "burst, interval"});
}

TEST(WebConfig, RateLimit) {
  WebConfig c;
  ASSERT_TRUE(problems("rate_limit:\n  interval: 250ms\n  burst: 7\n", &c).empty());
  EXPECT_EQ(c.rate_limit.interval, std::chrono::milliseconds(250));
  EXPECT_EQ(c.rate_limit.burst, 7);
  // A zero interval turns the limit off, as in exporter-toolkit.
  ASSERT_TRUE(problems("rate_limit: {interval: 0s, burst: 0}\n", &c).empty());
  EXPECT_EQ(c.rate_limit.interval, std::chrono::milliseconds(0));
  ASSERT_TRUE(problems("", &c).empty());
  EXPECT_EQ(c.rate_limit, WebConfig::RateLimit{});
}

TEST(WebConfig, TlsProblems) {
  const std::string base = "tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n";
  expect_one("tls_server_config:\n  cert_file: [a]\n  key_file: k\n",
             {"web.yml:2:14: tls_server_config.cert_file: expected a file name"});
  expect_one("tls_server_config:\n  cert_file: \"\"\n  key_file: k\n",
             {"cert_file: expected a file name"});
  expect_one("tls_server_config:\n  cert_file: c\n  key: \"\"\n", {"key: expected PEM text"});
  expect_one(base + "  client_auth_type: VerifyAlways\n",
             {"client_auth_type: expected one of NoClientCert, RequireAnyClientCert",
              "got \"VerifyAlways\""});
  expect_one(base + "  min_version: TLS10\n",
             {"web.yml:4:16: tls_server_config.min_version: TLS10 is not accepted"});
  expect_one(base + "  min_version: TLS11\n", {"min_version: TLS11 is not accepted"});
  expect_one(base + "  max_version: TLS11\n", {"max_version: TLS11 is not accepted"});
  expect_one(base + "  min_version: SSL3\n", {"expected one of TLS12, TLS13"});
  expect_one(base + "  min_version: TLS13\n  max_version: TLS12\n",
             {"min_version is newer than max_version"});
  expect_one(base + "  cipher_suites: TLS_AES_128_GCM_SHA256\n", {"expected a list"});
  expect_one(base + "  cipher_suites: [ECDHE-RSA-AES128-GCM-SHA256]\n",
             {"cipher_suites: unknown cipher suite \"ECDHE-RSA-AES128-GCM-SHA256\"",
              "Go crypto/tls name"});
  expect_one(base + "  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n", {"insecure"});
  expect_one(base + "  curve_preferences: CurveP256\n", {"expected a list of curve names"});
  expect_one(base + "  curve_preferences: [P-256]\n",
             {"curve_preferences: expected one of CurveP256", "got \"P-256\""});
  expect_one(base + "  prefer_server_cipher_suites: sometimes\n", {"expected true or false"});
  expect_one(base + "  client_allowed_sans: [a]\n",
             {"client_allowed_sans needs client certificates", "RequireAndVerifyClientCert"});
  expect_one(base +
                 "  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ca.pem\n"
                 "  client_allowed_sans: [a]\n",
             {"client_allowed_sans needs client certificates"});
  expect_one(base + "  client_auth_type: RequireAnyClientCert\n  client_allowed_sans: a\n",
             {"client_allowed_sans: expected a list of strings"});
  expect_one(base + "  client_auth_type: RequireAnyClientCert\n  client_allowed_sans: [\"\"]\n",
             {"client_allowed_sans: an empty name"});
}

TEST(WebConfig, ClientAllowedSans) {
  WebConfig c;
  ASSERT_TRUE(problems("tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n"
                       "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n"
                       "  client_allowed_sans: [scraper.example, 10.0.0.1]\n",
                       &c)
                  .empty());
  ASSERT_TRUE(c.tls);
  EXPECT_EQ(c.tls->client_allowed_sans, (std::vector<std::string>{"scraper.example", "10.0.0.1"}));
}

TEST(WebConfig, TlsCombinationProblems) {
  auto errors = problems("tls_server_config: {min_version: TLS12}\n");
  ASSERT_EQ(errors.size(), 2U);
  EXPECT_NE(errors[0].find("web.yml:1:20: tls_server_config: missing cert_file (or cert)"),
            std::string::npos)
      << errors[0];
  EXPECT_NE(errors[1].find("missing key_file (or key)"), std::string::npos) << errors[1];
  expect_one("tls_server_config: {cert_file: c}\n", {"missing key_file (or key)"});
  expect_one("tls_server_config: {cert_file: c, cert: x, key_file: k}\n",
             {"give cert_file or cert, not both"});
  expect_one("tls_server_config: {cert_file: c, key: x, key_file: k}\n",
             {"give key_file or key, not both"});
  const std::string base = "tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n";
  expect_one(base +
                 "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: a\n"
                 "  client_ca: b\n",
             {"give client_ca_file or client_ca, not both"});
  expect_one(base + "  client_ca_file: ca.pem\n",
             {"a client CA is configured but client_auth_type does not check"});
  expect_one(base + "  client_auth_type: RequireAndVerifyClientCert\n",
             {"needs client_ca_file (or client_ca)"});
  expect_one(base + "  client_auth_type: VerifyClientCertIfGiven\n",
             {"needs client_ca_file (or client_ca)"});
  // Go's RequestClientCert and RequireAnyClientCert check no chain: no CA needed.
  EXPECT_TRUE(problems(base + "  client_auth_type: RequireAnyClientCert\n").empty());
  EXPECT_TRUE(problems(base + "  client_auth_type: RequestClientCert\n").empty());
}

TEST(WebConfig, HeaderProblems) {
  expect_one("http_server_config: {headers: [a]}\n", {"headers: expected a mapping"});
  expect_one("http_server_config:\n  headers:\n    Set-Cookie: a\n",
             {"web.yml:3:5: http_server_config.headers.Set-Cookie: unknown header",
              "Content-Security-Policy"});
  expect_one("http_server_config:\n  headers:\n    X-Frame-Options: allow\n",
             {"X-Frame-Options: expected deny or sameorigin, got \"allow\""});
  expect_one("http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n",
             {"expected nosniff"});
  expect_one("http_server_config:\n  headers:\n    X-XSS-Protection: [1]\n",
             {"X-XSS-Protection: expected a string"});
  expect_one("http_server_config:\n  headers:\n    Content-Security-Policy: \"a\\nb\"\n",
             {"control character"});
}

TEST(WebConfig, UserProblemsNeverShowTheValue) {
  expect_one("basic_auth_users: [prom]\n", {"basic_auth_users: expected a mapping"});
  expect_one("basic_auth_users:\n  \"a:b\": x\n",
             {"basic_auth_users.a:b: a user name must be non-empty and hold no ':'"});
  expect_one("basic_auth_users:\n  \"\": x\n", {"must be non-empty"});
  for (const char* secret : {"plaintext-password", "$1$abcdefgh$0123456789012345678901",
                             "$2y$03$KlUMDg8/hTYzyUHGYH5etOm6STmU58gR.jglXJ8vLx18GQ3bbGZBa",
                             "$2y$05$KlUMDg8/hTYzyUHGYH5etOm6STmU58gR.jglXJ8vLx18GQ3bbGZB",
                             "$2x$05$KlUMDg8/hTYzyUHGYH5etOm6STmU58gR.jglXJ8vLx18GQ3bbGZBa",
                             "$2y$05$KlUMDg8/hTYzyUHGYH5etOm6STmU58gR.jglXJ8vLx18GQ3bbGZB!"}) {
    auto errors = problems(std::string("basic_auth_users:\n  prom: \"") + secret + "\"\n");
    ASSERT_EQ(errors.size(), 1U) << secret;
    EXPECT_NE(errors[0].find("web.yml:2:9: basic_auth_users.prom: expected a bcrypt hash"),
              std::string::npos)
        << errors[0];
    EXPECT_EQ(errors[0].find(secret), std::string::npos) << errors[0];
  }
  expect_one("basic_auth_users:\n  prom: [a]\n", {"expected a bcrypt hash"});
  EXPECT_TRUE(is_bcrypt_hash(kPromHash));
}

TEST(WebConfig, ProblemsAreAllReported) {
  auto errors = problems(
      "tls_server_config:\n  cert_file: c\n  key_file: k\n  min_version: TLS10\n"
      "  cipher_suites: [nope]\nbasic_auth_users: {u: x}\nother: 1\n");
  EXPECT_EQ(errors.size(), 4U);
}

TEST(WebConfig, MissingFileIsOneProblem) {
  WebConfig c;
  auto errors = load_web_config_file("/nonexistent/web.yml", c);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_NE(errors[0].find("/nonexistent/web.yml: cannot read web configuration file"),
            std::string::npos);
}

// A self-signed EC certificate and its key, made with OpenSSL.
struct Pem {
  std::string cert;
  std::string key;
};

std::string bio_text(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string s(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return s;
}

Pem make_certificate(const char* cn) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), 0);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509_sign(x, key, EVP_sha256());
  BIO* cert_bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(cert_bio, x);
  BIO* key_bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(key_bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  X509_free(x);
  EVP_PKEY_free(key);
  return {bio_text(cert_bio), bio_text(key_bio)};
}

class TlsContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("rdma_web_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    pem_ = make_certificate("server");
    write("server.pem", pem_.cert);
    write("server.key", pem_.key);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }

  // Loads a web configuration file written into the test directory.
  std::vector<std::string> load(const std::string& yaml, std::shared_ptr<const WebSecurity>& out) {
    return load_web_security(write("web.yml", yaml), out);
  }

  std::filesystem::path dir_;
  Pem pem_;
};

TEST_F(TlsContextTest, FilesRelativeToTheWebConfiguration) {
  std::shared_ptr<const WebSecurity> s;
  auto errors =
      load(std::string("tls_server_config: {cert_file: server.pem, key_file: "
                       "server.key}\nbasic_auth_users: {prom: \"") +
               kPromHash + "\"}\nhttp_server_config: {headers: {X-Frame-Options: deny}}\n",
           s);
  ASSERT_TRUE(errors.empty()) << errors.front();
  ASSERT_TRUE(s->tls);
  ASSERT_TRUE(s->auth);
  EXPECT_EQ(s->headers.size(), 1U);
  EXPECT_EQ(s->describe(),
            "TLS (TLS 1.2 to TLS 1.3, client certificates NoClientCert), basic auth for 1 user(s)");
}

TEST_F(TlsContextTest, NoFileMeansPlainHttp) {
  std::shared_ptr<const WebSecurity> s;
  ASSERT_TRUE(load_web_security("", s).empty());
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->tls);
  EXPECT_FALSE(s->auth);
  EXPECT_EQ(s->describe(), "plain HTTP, no authentication");
}

TEST_F(TlsContextTest, InlineCertificateAndKey) {
  WebConfig::Tls tls;
  tls.cert = pem_.cert;
  tls.key = pem_.key;
  tls.client_ca = pem_.cert;
  tls.client_auth = WebConfig::ClientAuth::require_and_verify;
  auto ctx = make_tls_context(tls);
  ASSERT_TRUE(ctx) << ctx.error().message;
}

TEST_F(TlsContextTest, ProblemsNameTheFileAndNeverTheKey) {
  std::shared_ptr<const WebSecurity> s;
  auto errors = load("tls_server_config: {cert_file: missing.pem, key_file: server.key}\n", s);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_NE(errors[0].find((dir_ / "missing.pem").string() + ": No such file or directory"),
            std::string::npos)
      << errors[0];

  write("garbage.pem", "not a certificate\n");
  errors = load("tls_server_config: {cert_file: garbage.pem, key_file: server.key}\n", s);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_NE(errors[0].find("garbage.pem: not a usable PEM certificate chain"), std::string::npos)
      << errors[0];

  // Another certificate's key.
  write("other.key", make_certificate("other").key);
  errors = load("tls_server_config: {cert_file: server.pem, key_file: other.key}\n", s);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_NE(errors[0].find("other.key: "), std::string::npos) << errors[0];
  EXPECT_EQ(errors[0].find("PRIVATE KEY"), std::string::npos) << errors[0];

  errors = load("tls_server_config: {cert_file: server.pem, key_file: server.pem}\n", s);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_NE(errors[0].find("server.pem: not a usable PEM private key"), std::string::npos)
      << errors[0];

  write("empty-ca.pem", "");
  errors = load(
      "tls_server_config: {cert_file: server.pem, key_file: server.key, "
      "client_auth_type: RequireAndVerifyClientCert, client_ca_file: empty-ca.pem}\n",
      s);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_NE(errors[0].find("empty-ca.pem: no PEM certificate in it"), std::string::npos)
      << errors[0];

  // A parse problem comes first, with its position.
  errors = load("tls_server_config: {cert_file: server.pem, key_file: server.key, x: 1}\n", s);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_NE(errors[0].find("web.yml:1:"), std::string::npos) << errors[0];
}

// Every Go cipher suite name the parser accepts maps to a suite OpenSSL has.
TEST_F(TlsContextTest, EveryAcceptedCipherSuiteExistsInOpenSsl) {
  const char* names[] = {"TLS_RSA_WITH_AES_128_CBC_SHA",
                         "TLS_RSA_WITH_AES_256_CBC_SHA",
                         "TLS_RSA_WITH_AES_128_CBC_SHA256",
                         "TLS_RSA_WITH_AES_128_GCM_SHA256",
                         "TLS_RSA_WITH_AES_256_GCM_SHA384",
                         "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
                         "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
                         "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
                         "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
                         "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
                         "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
                         "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                         "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
                         "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
                         "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
                         "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
                         "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
                         "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
                         "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
                         "TLS_AES_128_GCM_SHA256",
                         "TLS_AES_256_GCM_SHA384",
                         "TLS_CHACHA20_POLY1305_SHA256"};
  for (const char* name : names) {
    std::shared_ptr<const WebSecurity> s;
    auto errors = load(std::string("tls_server_config: {cert_file: server.pem, key_file: "
                                   "server.key, cipher_suites: [") +
                           name +
                           "], curve_preferences: [CurveP256, CurveP384, CurveP521, "
                           "X25519]}\n",
                       s);
    EXPECT_TRUE(errors.empty()) << name << ": " << errors.front();
  }
}

}  // namespace
}  // namespace rdma_exporter
