#include "exporter/http/basic_auth.hpp"

#include <crypt.h>
#include <gtest/gtest.h>

namespace rdma_exporter {
namespace {

// Made by `htpasswd -nbBC 5 prom 'secret pass'` (Apache's bcrypt, $2y$).
constexpr const char* kHtpasswdHash =
    "$2y$05$KlUMDg8/hTYzyUHGYH5etOm6STmU58gR.jglXJ8vLx18GQ3bbGZBa";

// A $2b$ hash made now by libcrypt, at the lowest cost to keep tests quick.
std::string fresh_hash(const std::string& password) {
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  EXPECT_NE(crypt_gensalt_rn("$2b$", 4, nullptr, 0, setting, sizeof setting), nullptr);
  crypt_data data{};
  const char* hash = crypt_r(password.c_str(), setting, &data);
  EXPECT_NE(hash, nullptr);
  return hash;
}

using Users = std::map<std::string, std::string>;

std::string basic(const std::string& base64) {
  return "Basic " + base64;
}

TEST(BasicAuthHeader, DecodesUserAndPassword) {
  auto c = parse_basic_authorization(basic("cHJvbTpzZWNyZXQgcGFzcw=="));  // prom:secret pass
  ASSERT_TRUE(c);
  EXPECT_EQ(c->user, "prom");
  EXPECT_EQ(c->password, "secret pass");
  // The scheme is case-insensitive; the password may hold colons.
  c = parse_basic_authorization("basic YTpiOmM=");  // a:b:c
  ASSERT_TRUE(c);
  EXPECT_EQ(c->user, "a");
  EXPECT_EQ(c->password, "b:c");
  c = parse_basic_authorization("Basic YTo=");  // "a:" (empty password)
  ASSERT_TRUE(c);
  EXPECT_EQ(c->password, "");
}

TEST(BasicAuthHeader, RejectsEverythingElse) {
  EXPECT_FALSE(parse_basic_authorization(""));
  EXPECT_FALSE(parse_basic_authorization("Basic"));
  EXPECT_FALSE(parse_basic_authorization("Basic "));
  EXPECT_FALSE(parse_basic_authorization("Bearer cHJvbTpzZWNyZXQ="));
  EXPECT_FALSE(parse_basic_authorization("Basicx cHJvbTpzZWNyZXQ="));
  EXPECT_FALSE(parse_basic_authorization(basic("cHJvbQ==")));          // "prom": no colon
  EXPECT_FALSE(parse_basic_authorization(basic("cHJvbTpzZWNyZXQ")));   // length not a multiple of 4
  EXPECT_FALSE(parse_basic_authorization(basic("cHJv*TpzZWNyZXQ=")));  // not base64
  EXPECT_FALSE(parse_basic_authorization(basic("cH=vbTpz")));          // padding in the middle
  EXPECT_FALSE(parse_basic_authorization(basic("c===")));
}

// The scheme and its separator are compared in every byte: "Basic " wrong
// in any one of them is another scheme (or none).
TEST(BasicAuthHeader, ASchemeWrongInAnyByteIsRefused) {
  const std::string good = basic("cHJvbTpzZWNyZXQgcGFzcw==");
  ASSERT_TRUE(parse_basic_authorization(good));
  for (std::size_t i = 0; i < std::string_view("Basic ").size(); ++i) {
    std::string bad = good;
    bad[i] = 'x';
    EXPECT_FALSE(parse_basic_authorization(bad)) << bad;
  }
}

TEST(Bcrypt, MatchesAnHtpasswdHash) {
  EXPECT_TRUE(bcrypt_matches("secret pass", kHtpasswdHash));
  EXPECT_FALSE(bcrypt_matches("secret pasS", kHtpasswdHash));
  EXPECT_FALSE(bcrypt_matches("", kHtpasswdHash));
}

TEST(Bcrypt, MatchesAHashMadeNow) {
  const std::string hash = fresh_hash("hunter2");
  ASSERT_EQ(hash.substr(0, 7), "$2b$04$");
  EXPECT_TRUE(bcrypt_matches("hunter2", hash));
  EXPECT_FALSE(bcrypt_matches("hunter3", hash));
}

TEST(Bcrypt, UnusableHashesNeverMatch) {
  EXPECT_FALSE(bcrypt_matches("x", ""));
  EXPECT_FALSE(bcrypt_matches("x", "*0"));
  EXPECT_FALSE(bcrypt_matches("x", "$2y$05$short"));
  // A hash whose digest was altered in its last character.
  std::string altered = kHtpasswdHash;
  altered.back() = altered.back() == 'a' ? 'b' : 'a';
  EXPECT_FALSE(bcrypt_matches("secret pass", altered));
}

TEST(BasicAuth, RemembersOnlySuccesses) {
  BasicAuth auth(Users{{"prom", kHtpasswdHash}});
  const Credentials good{"prom", "secret pass"};
  const Credentials wrong{"prom", "guess"};
  EXPECT_FALSE(auth.known_good(good));
  EXPECT_FALSE(auth.verify(wrong));
  EXPECT_FALSE(auth.known_good(wrong));
  EXPECT_TRUE(auth.verify(good));
  EXPECT_TRUE(auth.known_good(good));
  EXPECT_FALSE(auth.known_good(wrong));
  // The same password for another (unknown) user is not let through.
  EXPECT_FALSE(auth.known_good({"other", "secret pass"}));
  EXPECT_FALSE(auth.verify({"other", "secret pass"}));
  EXPECT_EQ(auth.user_count(), 1U);
}

TEST(BasicAuth, NewHashesForgetOldPasswords) {
  BasicAuth before(Users{{"prom", kHtpasswdHash}});
  ASSERT_TRUE(before.verify({"prom", "secret pass"}));
  BasicAuth after(Users{{"prom", fresh_hash("new pass")}});  // what a reload builds
  EXPECT_FALSE(after.known_good({"prom", "secret pass"}));
  EXPECT_FALSE(after.verify({"prom", "secret pass"}));
  EXPECT_TRUE(after.verify({"prom", "new pass"}));
}

TEST(BasicAuth, MemoryIsBoundedOldestFirst) {
  BasicAuth auth(Users{{"a", fresh_hash("pa")}, {"b", fresh_hash("pb")}, {"c", fresh_hash("pc")}},
                 /*cache_size=*/2);
  ASSERT_TRUE(auth.verify({"a", "pa"}));
  ASSERT_TRUE(auth.verify({"b", "pb"}));
  EXPECT_TRUE(auth.known_good({"a", "pa"}));
  ASSERT_TRUE(auth.verify({"c", "pc"}));
  EXPECT_FALSE(auth.known_good({"a", "pa"}));  // evicted
  EXPECT_TRUE(auth.known_good({"b", "pb"}));
  EXPECT_TRUE(auth.known_good({"c", "pc"}));
}

TEST(BasicAuth, NoUsersLetsNobodyIn) {
  BasicAuth auth(Users{});
  EXPECT_FALSE(auth.verify({"", ""}));
  EXPECT_FALSE(auth.known_good({"", ""}));
}

}  // namespace
}  // namespace rdma_exporter
