#pragma once

// Text helpers shared by the encoders: UTF-8 repair and JSON strings.

#include <string>
#include <string_view>

namespace rdma_exporter {

// `text` as valid UTF-8: each byte that does not start a well-formed
// sequence becomes U+FFFD. Protobuf strings and JSON must be UTF-8, while
// label values read from the kernel need not be.
std::string valid_utf8(std::string_view text);
bool is_valid_utf8(std::string_view text);

// A JSON string literal of `text` (quotes included): ", \ and control
// characters escaped, invalid UTF-8 replaced by U+FFFD.
std::string json_quote(std::string_view text);

}  // namespace rdma_exporter
