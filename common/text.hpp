#pragma once

// Text helpers shared by the encoders, the log and the parsers: UTF-8
// repair, quoted strings, comparisons without case, percent-decoding.

#include <string>
#include <string_view>

namespace rdma_exporter {

// `text` as valid UTF-8: each byte that does not start a well-formed
// sequence becomes U+FFFD. Protobuf strings and JSON must be UTF-8, while
// label values read from the kernel need not be.
std::string valid_utf8(std::string_view text);
bool is_valid_utf8(std::string_view text);
// Length of the well-formed UTF-8 sequence at text[i], or 0 when none
// starts there (Unicode table 3-7); 1 for an ASCII byte.
std::size_t utf8_length(std::string_view text, std::size_t i);

// How quote() writes what a format cannot carry raw.
enum class QuoteStyle {
  // RFC 8259: other control characters as \u00XX, invalid UTF-8 as U+FFFD.
  json,
  // Log lines: other control characters, DEL and each byte that is not part
  // of well-formed UTF-8 as \xXX, C1 controls (U+0080 to U+009F) as
  // \u00XX; no byte of the text can end a line or forge a field.
  logfmt,
};

// A double-quoted literal of `text` (quotes included): ", \, newline,
// carriage return and tab escaped with a backslash, the rest as `style` says.
std::string quote(std::string_view text, QuoteStyle style);

// A JSON string literal of `text`.
inline std::string json_quote(std::string_view text) {
  return quote(text, QuoteStyle::json);
}

// ASCII letters compared without case (HTTP header names, URL schemes);
// other bytes compared as they are.
bool equals_nocase(std::string_view a, std::string_view b);
bool starts_with_nocase(std::string_view text, std::string_view prefix);

// Decodes %XX escapes (RFC 3986) into `out`; with `plus_is_space` (an HTML
// form's query string) '+' also stands for a space. False when a '%' is not
// followed by two hex digits.
bool percent_decode(std::string_view in, std::string& out, bool plus_is_space = false);

}  // namespace rdma_exporter
