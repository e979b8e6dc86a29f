// exporter/formats/protobuf_writer: the bytes of each kind of field, as the
// protobuf encoding specification spells them out, compared whole: every
// tag (field number and wire type), length prefix and value byte.

#include "exporter/formats/protobuf_writer.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace rdma_exporter {
namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

template <typename Write>
std::string written(Write&& write) {
  ProtobufWriter w;
  write(w);
  return w.take();
}

TEST(ProtobufWriter, VarintsAtEveryLengthBoundary) {
  const std::vector<std::pair<uint64_t, std::string>> cases = {
      {0, bytes({0x00})},
      {1, bytes({0x01})},
      {127, bytes({0x7f})},
      {128, bytes({0x80, 0x01})},
      {150, bytes({0x96, 0x01})},
      {300, bytes({0xac, 0x02})},
      {16383, bytes({0xff, 0x7f})},
      {16384, bytes({0x80, 0x80, 0x01})},
      {uint64_t{1} << 63, bytes({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})},
      {std::numeric_limits<uint64_t>::max(),
       bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})},
  };
  for (const auto& [value, encoded] : cases) {
    // A copy: clang 14 does not capture structured bindings.
    const uint64_t v = value;
    EXPECT_EQ(written([v](ProtobufWriter& w) { w.varint_field(1, v); }), bytes({0x08}) + encoded)
        << value;
  }
}

// The tag is (field number << 3) | wire type, itself a varint.
TEST(ProtobufWriter, TagsCarryTheFieldNumberAndTheWireType) {
  EXPECT_EQ(written([](ProtobufWriter& w) { w.varint_field(15, 0); }), bytes({0x78, 0x00}));
  EXPECT_EQ(written([](ProtobufWriter& w) { w.varint_field(16, 0); }), bytes({0x80, 0x01, 0x00}));
  EXPECT_EQ(written([](ProtobufWriter& w) { w.fixed64_field(1, 0); }),
            bytes({0x09, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(written([](ProtobufWriter& w) { w.string_field(1, ""); }), bytes({0x0a, 0x00}));
  EXPECT_EQ(written([](ProtobufWriter& w) { w.string_field(2047, "x"); }),
            bytes({0xfa, 0x7f, 0x01, 'x'}));
}

// Eight little-endian bytes, each of the value's bytes distinct so that a
// byte left out or out of order shows.
TEST(ProtobufWriter, Fixed64FieldsAreEightLittleEndianBytes) {
  EXPECT_EQ(written([](ProtobufWriter& w) { w.fixed64_field(2, 0x0807060504030201ULL); }),
            bytes({0x11, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08}));
  EXPECT_EQ(written([](ProtobufWriter& w) { w.sfixed64_field(3, -2); }),
            bytes({0x19, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
  // 1.5 is 0x3ff8000000000000.
  EXPECT_EQ(written([](ProtobufWriter& w) { w.double_field(4, 1.5); }),
            bytes({0x21, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f}));
  EXPECT_EQ(written([](ProtobufWriter& w) {
              w.packed_fixed64(5, {0x1112131415161718ULL, 0x2122232425262728ULL});
            }),
            bytes({0x2a, 0x10, 0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11, 0x28, 0x27, 0x26,
                   0x25, 0x24, 0x23, 0x22, 0x21}));
  EXPECT_EQ(written([](ProtobufWriter& w) {
              w.packed_double(6, {1.5, -2.0});
            }),
            bytes({0x32, 0x10, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0xc0}));
}

// A length prefix is a varint too: 127 bytes take one byte of it, 128 two.
TEST(ProtobufWriter, LengthPrefixesOfStringsAndNestedMessages) {
  for (std::size_t n : {std::size_t{127}, std::size_t{128}}) {
    const std::string s(n, 'q');
    const std::string prefix = n < 128 ? bytes({0x0a, 0x7f}) : bytes({0x0a, 0x80, 0x01});
    EXPECT_EQ(written([&](ProtobufWriter& w) { w.string_field(1, s); }), prefix + s) << n;
    // A nested message of n bytes: a 2-byte tag, a 1-byte length, a string.
    const std::string inner(n - 3, 'q');
    EXPECT_EQ(written([&](ProtobufWriter& w) {
                w.begin(1);
                w.string_field(16, inner);
                w.end();
              }),
              prefix + bytes({0x82, 0x01, static_cast<int>(inner.size())}) + inner)
        << n;
  }
  // Messages nested in messages, each closed with its own length.
  EXPECT_EQ(written([](ProtobufWriter& w) {
              w.begin(1);
              w.varint_field(1, 150);
              w.begin(2);
              w.string_field(3, "ab");
              w.end();
              w.end();
              w.varint_field(4, 1);
            }),
            bytes({0x0a, 0x09, 0x08, 0x96, 0x01, 0x12, 0x04, 0x1a, 0x02, 'a', 'b', 0x20, 0x01}));
}

// Protobuf strings are UTF-8: each invalid byte becomes U+FFFD.
TEST(ProtobufWriter, InvalidUtf8IsReplaced) {
  EXPECT_EQ(written([](ProtobufWriter& w) { w.string_field(1, "a\xff"); }),
            bytes({0x0a, 0x04, 'a', 0xef, 0xbf, 0xbd}));
}

}  // namespace
}  // namespace rdma_exporter
