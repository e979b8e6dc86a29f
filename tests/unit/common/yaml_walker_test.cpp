// common/yaml_walker: typed integer fields take a value in range into their
// own type (plain or optional) and report anything else without changing
// the field; a section tells whether an error was recorded since it was made.

#include "common/yaml_walker.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

namespace rdma_exporter {
namespace {

struct Fields {
  int i = -7;
  uint8_t u8 = 9;
  std::size_t size = 11;
  uint32_t u32 = 13;
  std::optional<int> opt;
  std::optional<uint32_t> opt_u32;
};

std::vector<std::string> walk(const std::string& yaml, Fields& f) {
  Walker w("test.yml");
  w.mapping(YAML::Load(yaml), "",
            {{"i", w.integer(f.i, -5, 5)},
             {"u8", w.integer(f.u8, 0, 1000)},  // wider than the type: clipped to 255
             {"size", w.integer(f.size, 1, 1 << 20)},
             {"u32", w.integer(f.u32, 0, 65535)},
             {"opt", w.integer(f.opt, -1, 65535)},
             {"opt_u32", w.integer(f.opt_u32, 1, 1 << 30)}});
  return w.take();
}

TEST(WalkerInteger, ValuesInRangeGoIntoEachType) {
  Fields f;
  EXPECT_TRUE(
      walk("{i: -5, u8: 255, size: 1048576, u32: 65535, opt: -1, opt_u32: 1073741824}", f).empty());
  EXPECT_EQ(f.i, -5);
  EXPECT_EQ(f.u8, 255);
  EXPECT_EQ(f.size, 1048576u);
  EXPECT_EQ(f.u32, 65535u);
  EXPECT_EQ(f.opt, -1);
  EXPECT_EQ(f.opt_u32, 1u << 30);
}

TEST(WalkerInteger, EveryBadValueIsReportedAndLeavesTheFieldAlone) {
  Fields f;
  const auto errors = walk("{i: 6, u8: 256, size: 0, u32: x, opt: [1], opt_u32: 1073741825}", f);
  EXPECT_EQ(errors, (std::vector<std::string>{
                        "test.yml:1:5: i: expected an integer from -5 to 5, got \"6\"",
                        "test.yml:1:12: u8: expected an integer from 0 to 255, got \"256\"",
                        "test.yml:1:23: size: expected an integer from 1 to 1048576, got \"0\"",
                        "test.yml:1:31: u32: expected an integer from 0 to 65535, got \"x\"",
                        "test.yml:1:39: opt: expected an integer from -1 to 65535",
                        "test.yml:1:53: opt_u32: expected an integer from 1 to 1073741824, got "
                        "\"1073741825\""}));
  EXPECT_EQ(f.i, -7);
  EXPECT_EQ(f.u8, 9);
  EXPECT_EQ(f.size, 11u);
  EXPECT_EQ(f.u32, 13u);
  EXPECT_EQ(f.opt, std::nullopt);
  EXPECT_EQ(f.opt_u32, std::nullopt);
}

TEST(WalkerInteger, TrailingTextAndOverflowAreNotIntegers) {
  Fields f;
  const auto errors = walk("{i: 1x}\n", f);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "test.yml:1:5: i: expected an integer from -5 to 5, got \"1x\"");
  Fields g;
  const auto big = walk("{u32: 99999999999999999999}\n", g);
  ASSERT_EQ(big.size(), 1u);
  EXPECT_EQ(g.u32, 13u);
}

TEST(WalkerSection, CleanUntilAnErrorIsRecordedAfterIt) {
  Walker w("test.yml");
  int i = 0;
  const Walker::Section outer = w.section();
  w.mapping(YAML::Load("{i: 3}"), "", {{"i", w.integer(i, 0, 5)}});
  EXPECT_EQ(i, 3);
  EXPECT_FALSE(outer.failed());
  w.mapping(YAML::Load("{i: 9}"), "", {{"i", w.integer(i, 0, 5)}});
  EXPECT_TRUE(outer.failed());
  EXPECT_EQ(i, 3);
}

TEST(WalkerSection, ErrorsBeforeTheSectionDoNotCount) {
  Walker w("test.yml");
  w.error_at(YAML::Load("x"), "a", "first problem");
  const Walker::Section section = w.section();
  EXPECT_FALSE(section.failed());
  w.error_at(YAML::Load("y"), "b", "second problem");
  EXPECT_TRUE(section.failed());
  const Walker::Section later = w.section();
  EXPECT_FALSE(later.failed());
}

TEST(WalkerSection, TakingTheErrorsNeitherHidesNorInventsOne) {
  Walker w("test.yml");
  w.error_at(YAML::Load("x"), "a", "before");
  const Walker::Section clean = w.section();
  w.error_at(YAML::Load("y"), "b", "inside");
  const Walker::Section after = w.section();
  EXPECT_EQ(w.take().size(), 2u);
  EXPECT_TRUE(clean.failed());
  EXPECT_FALSE(after.failed());
  w.error_at(YAML::Load("z"), "c", "after the take");
  EXPECT_TRUE(after.failed());
}

}  // namespace
}  // namespace rdma_exporter
