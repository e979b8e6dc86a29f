#pragma once

// The protobuf wire format, written front to back: scalar fields, strings,
// packed repeated fields and nested messages.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rdma_exporter {

class ProtobufWriter {
 public:
  void varint_field(uint32_t field, uint64_t v);
  void fixed64_field(uint32_t field, uint64_t v);
  void double_field(uint32_t field, double v);
  void sfixed64_field(uint32_t field, int64_t v);
  // Invalid UTF-8 is sent with each bad byte as U+FFFD: protobuf strings
  // must be UTF-8, label values read from the kernel need not be.
  void string_field(uint32_t field, std::string_view s);
  void packed_fixed64(uint32_t field, const std::vector<uint64_t>& values);
  void packed_double(uint32_t field, const std::vector<double>& values);

  // A nested message: fields written between begin() and end() belong to it.
  // Its length is put in front of it by end().
  void begin(uint32_t field);
  void end();

  // The message; the writer is left empty.
  std::string take();

 private:
  void varint(uint64_t v);
  void fixed64(uint64_t v);
  void tag(uint32_t field, uint32_t wire_type);

  std::string out_;
  std::vector<std::size_t> open_;  // where each open message's content starts
};

}  // namespace rdma_exporter
