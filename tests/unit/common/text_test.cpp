// common/text: comparing ASCII text without case.

#include "common/text.hpp"

#include <gtest/gtest.h>

namespace rdma_exporter {
namespace {

TEST(TextNoCase, EqualsIgnoresTheCaseOfAsciiLettersOnly) {
  EXPECT_TRUE(equals_nocase("Content-Type", "content-TYPE"));
  EXPECT_TRUE(equals_nocase("", ""));
  EXPECT_FALSE(equals_nocase("Content-Type", "Content-Typ"));
  EXPECT_FALSE(equals_nocase("Content-Typ", "Content-Type"));
  // Other bytes as they are: '[' is 'Z' + 1, '{' is 'z' + 1.
  EXPECT_FALSE(equals_nocase("[", "{"));
  EXPECT_FALSE(equals_nocase("\xc3\x89", "\xc3\xa9"));  // É and é in UTF-8
  EXPECT_FALSE(equals_nocase("a-b", "a_b"));
}

TEST(TextNoCase, StartsWithComparesThePrefixWithoutCase) {
  EXPECT_TRUE(starts_with_nocase("HTTPS://host:4318", "https://"));
  EXPECT_TRUE(starts_with_nocase("https://host", "HTTPS://"));
  EXPECT_TRUE(starts_with_nocase("anything", ""));
  EXPECT_FALSE(starts_with_nocase("http://host", "https://"));
  EXPECT_FALSE(starts_with_nocase("http", "https"));  // shorter than the prefix
}

}  // namespace
}  // namespace rdma_exporter
