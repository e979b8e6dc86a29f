// Configuration patterns (common/pattern.hpp): RE2 syntax, whole-name
// matching byte by byte, the first capture group, and the refusals.

#include "common/pattern.hpp"

#include <gtest/gtest.h>

#include <string>

namespace rdma_exporter {
namespace {

Pattern compiled(const std::string& text) {
  auto p = Pattern::compile(text);
  EXPECT_TRUE(p) << text << ": " << p.error().message;
  return p ? std::move(p).value() : Pattern();
}

TEST(Pattern, MatchesTheWholeName) {
  const Pattern mlx = compiled("mlx5_[0-9]");
  EXPECT_TRUE(mlx.matches("mlx5_0"));
  EXPECT_FALSE(mlx.matches("mlx5_01"));
  EXPECT_FALSE(mlx.matches("xmlx5_0"));
  EXPECT_FALSE(mlx.matches(""));
  // Alternation is inside the anchors: neither branch matches a longer name.
  const Pattern either = compiled("mlx5_0|mlx5_1");
  EXPECT_TRUE(either.matches("mlx5_0"));
  EXPECT_TRUE(either.matches("mlx5_1"));
  EXPECT_FALSE(either.matches("mlx5_10"));
  EXPECT_FALSE(either.matches("mlx5_0x"));
  const Pattern empty = compiled("");
  EXPECT_TRUE(empty.matches(""));
  EXPECT_FALSE(empty.matches("a"));
  EXPECT_EQ(either.text(), "mlx5_0|mlx5_1");
}

// Names are bytes: "." is one byte, and bytes that are no UTF-8 match.
TEST(Pattern, MatchesByteByByte) {
  const Pattern two = compiled("rx..");
  EXPECT_TRUE(two.matches("rx\xc3\xa9"));  // "rxé" in UTF-8: two bytes
  EXPECT_TRUE(two.matches("rx\xff\xfe"));
  EXPECT_FALSE(two.matches("rx\xc3"));
  EXPECT_TRUE(compiled("\\xff+").matches("\xff\xff"));
  EXPECT_TRUE(compiled("caf\xc3\xa9").matches("caf\xc3\xa9"));
}

TEST(Pattern, FirstCaptureGroup) {
  const Pattern prio = compiled("rx_prio([0-7])_pause");
  EXPECT_EQ(prio.capture_groups(), 1);
  std::string group = "stale";
  EXPECT_TRUE(prio.matches("rx_prio3_pause", group));
  EXPECT_EQ(group, "3");
  EXPECT_FALSE(prio.matches("rx_prio9_pause", group));
  EXPECT_EQ(group, "");
  // A group that takes no part, and a pattern without groups.
  const Pattern optional = compiled("(x)?rx_pause");
  EXPECT_TRUE(optional.matches("rx_pause", group));
  EXPECT_EQ(group, "");
  EXPECT_TRUE(optional.matches("xrx_pause", group));
  EXPECT_EQ(group, "x");
  const Pattern plain = compiled("rx_pause");
  EXPECT_EQ(plain.capture_groups(), 0);
  group = "stale";
  EXPECT_TRUE(plain.matches("rx_pause", group));
  EXPECT_EQ(group, "");
  EXPECT_EQ(compiled("(?:a)(b)(c)").capture_groups(), 2);
}

// (a+)+b against a long run of a takes a backtracking engine time
// exponential in the run's length; RE2 answers at once.
TEST(Pattern, NestedQuantifiersMatchLongNamesInLinearTime) {
  const Pattern p = compiled("(a+)+b");
  const std::string run(200000, 'a');
  EXPECT_FALSE(p.matches(run));
  EXPECT_TRUE(p.matches(run + "b"));
  std::string group;
  EXPECT_FALSE(compiled("(a|aa)+c").matches(run, group));
}

TEST(Pattern, DefaultMatchesEverything) {
  const Pattern all;
  EXPECT_TRUE(all.matches(""));
  EXPECT_TRUE(all.matches("mlx5_0"));
  EXPECT_TRUE(all.matches("a\nb"));
  EXPECT_TRUE(all.matches(std::string(1, '\0')));
}

TEST(Pattern, RefusalsSayWhy) {
  const std::pair<const char*, const char*> refused[] = {
      {"(a)\\1",
       "back-references (\\1 to \\9) are not supported (RE2 syntax); a character by its code is "
       "written \\x41"},
      {"a{1001}", "a repeat count above the 1000 allowed"},
      {"(a{40}){30}", "invalid repetition size: {30}"},
      {"a+*", "bad repetition operator: +*"},
      {"(", "missing ): ("},
      {"(?<=a)b", "invalid perl operator: (?<"},
  };
  for (const auto& [text, why] : refused) {
    auto p = Pattern::compile(text);
    ASSERT_FALSE(p) << text;
    EXPECT_EQ(p.error().code, EINVAL);
    EXPECT_EQ(p.error().message, why) << text;
  }
  auto long_one = Pattern::compile(std::string(1025, 'a'));
  ASSERT_FALSE(long_one);
  EXPECT_EQ(long_one.error().message, "a pattern of 1025 bytes, more than the 1024 allowed");
  EXPECT_TRUE(Pattern::compile(std::string(1024, 'a')));
  // Escaped backslashes and \Q...\E quote a digit; \0 is an octal escape.
  EXPECT_TRUE(compiled("a\\\\1").matches("a\\1"));
  EXPECT_TRUE(compiled("\\Q(a)\\1\\E").matches("(a)\\1"));
  EXPECT_TRUE(compiled("\\0").matches(std::string(1, '\0')));
}

// A pattern that should have been checked but does not compile matches
// nothing rather than everything.
TEST(Pattern, CheckedPatternThatDoesNotCompileMatchesNothing) {
  const Pattern broken = Pattern::checked("mlx5_[");
  EXPECT_FALSE(broken.matches("mlx5_["));
  EXPECT_FALSE(broken.matches(""));
  EXPECT_FALSE(broken.matches("\xff"));
  EXPECT_TRUE(Pattern::checked("mlx5_.*").matches("mlx5_3"));
}

}  // namespace
}  // namespace rdma_exporter
