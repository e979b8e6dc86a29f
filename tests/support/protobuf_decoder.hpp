#pragma once

// A protobuf wire-format reader for tests, written from the encoding
// specification and independent of the exporter's writer. A malformed
// message, or a field that is missing or repeated where one is expected,
// fails the running test.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace rdma_exporter::testing {

struct PbField {
  uint32_t number = 0;
  int wire = -1;
  uint64_t scalar = 0;     // varint, fixed64, fixed32
  std::string_view bytes;  // length-delimited
};

// Every field of a message, in order.
std::vector<PbField> pb_fields(std::string_view msg);
// The fields numbered `number`.
std::vector<PbField> pb_all(std::string_view msg, uint32_t number);
// The one field `number` with wire type `wire`; a default field when absent.
PbField pb_one(std::string_view msg, uint32_t number, int wire);
bool pb_has(std::string_view msg, uint32_t number);

// The little-endian number in the first `n` bytes of `in`.
uint64_t read_le(std::string_view in, int n);
// The double whose bits a fixed64 field holds.
double as_double(uint64_t bits);

// A repeated KeyValue field (string values only) as a map.
std::map<std::string, std::string> pb_attributes(std::string_view msg, uint32_t number);

}  // namespace rdma_exporter::testing
