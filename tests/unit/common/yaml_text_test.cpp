// common/yaml_text: what a YAML stream may not hold is refused at its line
// and column before yaml-cpp sees it; text, UTF-8 included, loads as before.

#include "common/yaml_text.hpp"

#include <gtest/gtest.h>

#include <string>

namespace rdma_exporter {
namespace {

using namespace std::string_literals;

TEST(YamlText, TextLoadsUnchanged) {
  // Tab, CR LF, NEL, a BOM, two-, three- and four-byte characters.
  const std::string text =
      "\xef\xbb\xbf"
      "a: \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"\r\nb:\t[1, 2]\n# \xc2\x85 done\n";
  EXPECT_FALSE(yaml_text_problem(text));
  const YAML::Node n = load_yaml(text);
  EXPECT_EQ(n["a"].as<std::string>(), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  EXPECT_EQ(n["b"][1].as<int>(), 2);
  EXPECT_TRUE(load_yaml("").IsNull());
  EXPECT_TRUE(load_yaml("# nothing\n").IsNull());
}

TEST(YamlText, EachForbiddenCharacterIsFoundAtItsLineAndColumn) {
  struct Case {
    std::string text;
    int pos, line, column;
    std::string what;
  };
  const Case cases[] = {
      {"%\x01", 1, 0, 1, "U+0001"},
      {"ab\ncd\x7f", 5, 1, 2, "U+007F"},
      {"a\r\nb\rc\x00"s, 6, 2, 1, "U+0000"},
      {"\xc3\xa9\xc3\xa9\x0b", 4, 0, 2, "U+000B"},
      {"x: \xc2\x80", 3, 0, 3, "U+0080"},  // a C1 control other than NEL
      {"x\n\xef\xbf\xbe", 2, 1, 0, "U+FFFE"},
      {"x\n y\xff", 4, 1, 2, "byte 0xff is not UTF-8"},
      {"\xed\xa0\x80", 0, 0, 0, "byte 0xed is not UTF-8"},  // a surrogate
      {"- a\n- \xc3", 6, 1, 2, "byte 0xc3 is not UTF-8"},   // cut short
  };
  for (const auto& c : cases) {
    const auto p = yaml_text_problem(c.text);
    ASSERT_TRUE(p) << c.what;
    EXPECT_EQ(p->mark.pos, c.pos) << c.what;
    EXPECT_EQ(p->mark.line, c.line) << c.what;
    EXPECT_EQ(p->mark.column, c.column) << c.what;
    EXPECT_NE(p->what.find(c.what), std::string::npos) << p->what;
    try {
      load_yaml(c.text);
      ADD_FAILURE() << c.what << ": loaded";
    } catch (const YAML::ParserException& e) {
      EXPECT_EQ(e.mark.line, c.line) << c.what;
      EXPECT_EQ(e.msg, p->what);
    }
  }
}

TEST(YamlText, GarbageThatYamlCppLoadsAsEmptyIsRefused) {
  // yaml-cpp alone reads this as an unknown directive and an empty document.
  const std::string garbage = "%\x81\x02 foo";
  EXPECT_TRUE(YAML::Load(garbage).IsNull());
  EXPECT_THROW(load_yaml(garbage), YAML::ParserException);
}

}  // namespace
}  // namespace rdma_exporter
