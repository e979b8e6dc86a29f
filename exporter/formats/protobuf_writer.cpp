#include "exporter/formats/protobuf_writer.hpp"

#include <bit>
#include <utility>

#include "common/text.hpp"

namespace rdma_exporter {
namespace {

constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kLengthDelimited = 2;

std::size_t encode_varint(uint64_t v, char* buf) {
  std::size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  return n;
}

}  // namespace

void ProtobufWriter::varint_field(uint32_t field, uint64_t v) {
  tag(field, kVarint);
  varint(v);
}

void ProtobufWriter::fixed64_field(uint32_t field, uint64_t v) {
  tag(field, kFixed64);
  fixed64(v);
}

void ProtobufWriter::double_field(uint32_t field, double v) {
  fixed64_field(field, std::bit_cast<uint64_t>(v));
}

void ProtobufWriter::sfixed64_field(uint32_t field, int64_t v) {
  fixed64_field(field, static_cast<uint64_t>(v));
}

void ProtobufWriter::string_field(uint32_t field, std::string_view s) {
  if (!is_valid_utf8(s)) return string_field(field, valid_utf8(s));
  tag(field, kLengthDelimited);
  varint(s.size());
  out_.append(s);
}

void ProtobufWriter::packed_fixed64(uint32_t field, const std::vector<uint64_t>& values) {
  tag(field, kLengthDelimited);
  varint(values.size() * 8);
  for (uint64_t v : values) fixed64(v);
}

void ProtobufWriter::packed_double(uint32_t field, const std::vector<double>& values) {
  tag(field, kLengthDelimited);
  varint(values.size() * 8);
  for (double v : values) fixed64(std::bit_cast<uint64_t>(v));
}

void ProtobufWriter::begin(uint32_t field) {
  tag(field, kLengthDelimited);
  open_.push_back(out_.size());
}

void ProtobufWriter::end() {
  const std::size_t start = open_.back();
  open_.pop_back();
  char buf[10];
  const std::size_t n = encode_varint(out_.size() - start, buf);
  out_.insert(start, buf, n);
}

std::string ProtobufWriter::take() {
  open_.clear();
  return std::exchange(out_, {});
}

void ProtobufWriter::varint(uint64_t v) {
  char buf[10];
  out_.append(buf, encode_varint(v, buf));
}

void ProtobufWriter::fixed64(uint64_t v) {
  for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void ProtobufWriter::tag(uint32_t field, uint32_t wire_type) {
  varint((uint64_t{field} << 3) | wire_type);
}

}  // namespace rdma_exporter
