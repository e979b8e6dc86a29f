#include "tests/support/protobuf_decoder.hpp"

#include <gtest/gtest.h>

#include <bit>

namespace rdma_exporter::testing {

namespace {

bool read_varint(std::string_view& in, uint64_t& out) {
  out = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (in.empty()) return false;
    const auto b = static_cast<unsigned char>(in.front());
    in.remove_prefix(1);
    out |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

}  // namespace

uint64_t read_le(std::string_view in, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

std::vector<PbField> pb_fields(std::string_view in) {
  std::vector<PbField> out;
  while (!in.empty()) {
    uint64_t key = 0;
    if (!read_varint(in, key)) {
      ADD_FAILURE() << "truncated key";
      return out;
    }
    PbField f;
    f.number = static_cast<uint32_t>(key >> 3);
    f.wire = static_cast<int>(key & 7);
    if (f.wire == 0) {
      if (!read_varint(in, f.scalar)) ADD_FAILURE() << "truncated varint";
    } else if (f.wire == 1 || f.wire == 5) {
      const std::size_t n = f.wire == 1 ? 8 : 4;
      if (in.size() < n) {
        ADD_FAILURE() << "truncated fixed";
        return out;
      }
      f.scalar = read_le(in, static_cast<int>(n));
      in.remove_prefix(n);
    } else if (f.wire == 2) {
      uint64_t len = 0;
      if (!read_varint(in, len) || len > in.size()) {
        ADD_FAILURE() << "bad length";
        return out;
      }
      f.bytes = in.substr(0, len);
      in.remove_prefix(len);
    } else {
      ADD_FAILURE() << "unexpected wire type " << f.wire;
      return out;
    }
    out.push_back(f);
  }
  return out;
}

std::vector<PbField> pb_all(std::string_view msg, uint32_t number) {
  std::vector<PbField> out;
  for (const auto& f : pb_fields(msg)) {
    if (f.number == number) out.push_back(f);
  }
  return out;
}

PbField pb_one(std::string_view msg, uint32_t number, int wire) {
  const auto all = pb_all(msg, number);
  EXPECT_EQ(all.size(), 1u) << "field " << number;
  if (all.size() != 1) return {};
  EXPECT_EQ(all[0].wire, wire) << "field " << number;
  return all[0];
}

bool pb_has(std::string_view msg, uint32_t number) {
  return !pb_all(msg, number).empty();
}

double as_double(uint64_t bits) {
  return std::bit_cast<double>(bits);
}

std::map<std::string, std::string> pb_attributes(std::string_view msg, uint32_t number) {
  std::map<std::string, std::string> out;
  for (const auto& kv : pb_all(msg, number)) {
    EXPECT_EQ(kv.wire, 2);
    const std::string key(pb_one(kv.bytes, 1, 2).bytes);
    const auto any = pb_one(kv.bytes, 2, 2).bytes;
    out[key] = std::string(pb_one(any, 1, 2).bytes);  // AnyValue.string_value
  }
  return out;
}

}  // namespace rdma_exporter::testing
