// The one JSON writer: separators, string escaping, and doubles (finite
// digits and the spelling of NaN and the infinities).

#include "common/json_writer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>

namespace rdma_exporter {
namespace {

TEST(JsonWriter, PlacesCommasAndColons) {
  JsonWriter w;
  w.begin_object();
  w.key("a");
  w.integer(1);
  w.key("b");
  w.begin_array();
  w.string("x");
  w.boolean(false);
  w.begin_object();
  w.end_object();
  w.begin_array();
  w.end_array();
  w.integer(18446744073709551615u);
  w.end_array();
  w.key("c");
  w.boolean(true);
  w.end_object();
  EXPECT_EQ(w.take(), R"({"a":1,"b":["x",false,{},[],18446744073709551615],"c":true})");
}

TEST(JsonWriter, TakeStartsANewDocument) {
  JsonWriter w;
  w.begin_array();
  w.integer(1);
  EXPECT_EQ(w.take(), "[1");  // an unfinished document is given as it is
  w.begin_array();
  w.integer(2);
  w.end_array();
  EXPECT_EQ(w.take(), "[2]");
}

TEST(JsonWriter, EscapesStringsAndKeys) {
  JsonWriter w;
  w.begin_object();
  w.key("k\"ey\n");
  w.string("q\"b\\s/\nr\rt\t\x01\x1f\x7f caf\xc3\xa9 \xff.");
  w.end_object();
  EXPECT_EQ(w.take(),
            "{\"k\\\"ey\\n\":\"q\\\"b\\\\s/\\nr\\rt\\t\\u0001\\u001f\\u007f caf\xc3\xa9 "
            "\xef\xbf\xbd.\"}");
}

TEST(JsonWriter, ShortestNumbersByDefault) {
  JsonWriter w;
  w.begin_array();
  for (double v : std::initializer_list<double>{0.1, 2.0, -0.5, 1e14, 1e19, 123456789.123456789,
                                                NAN, INFINITY, -INFINITY}) {
    w.number(v);
  }
  w.end_array();
  EXPECT_EQ(w.take(),
            R"([0.1,2,-0.5,1e+14,1e+19,123456789.12345679,"NaN","Infinity","-Infinity"])");
}

TEST(JsonWriter, NumbersAsTheDocumentSpellsThem) {
  const JsonWriter::Numbers fixed{[](double v) { return "<" + std::to_string(v) + ">"; }, "nan",
                                  "inf", "-inf"};
  JsonWriter w(fixed);
  w.begin_array();
  for (double v : std::initializer_list<double>{1.5, NAN, INFINITY, -INFINITY}) w.number(v);
  w.end_array();
  EXPECT_EQ(w.take(), R"([<1.500000>,"nan","inf","-inf"])");
}

}  // namespace
}  // namespace rdma_exporter
