#pragma once

// A JSON document written front to back, for every JSON the daemon writes
// (the `--once --format json` document, OTLP/JSON). The writer places the
// commas and colons; strings are escaped: quote, backslash and control
// characters (\n, \r, \t, else \u00XX), invalid UTF-8 as U+FFFD.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rdma_exporter {

class JsonWriter {
 public:
  // How doubles are written. JSON has no literal for NaN or the infinities:
  // they become strings, spelled as the document's format says.
  struct Numbers {
    std::string (*finite)(double);  // the digits of a finite value
    std::string_view nan;
    std::string_view positive_infinity;
    std::string_view negative_infinity;
  };
  // The shortest digits that read back as the same double (std::to_chars);
  // "NaN", "Infinity", "-Infinity" (the protobuf JSON mapping's spelling).
  static const Numbers kShortestNumbers;

  explicit JsonWriter(Numbers numbers = kShortestNumbers);

  void begin_object();
  void end_object();
  void begin_array();
  void end_array();
  // Names the next value of the current object.
  void key(std::string_view k);

  void string(std::string_view s);
  void boolean(bool v);
  void integer(uint64_t v);
  void number(double v);

  // The document so far; the writer is left empty.
  std::string take();

 private:
  void before_value();

  Numbers numbers_;
  std::string out_;
  std::vector<bool> first_;  // per open object or array: nothing in it yet
  bool after_key_ = false;
};

}  // namespace rdma_exporter
