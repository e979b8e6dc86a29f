#include "common/json_writer.hpp"

#include <charconv>
#include <cmath>
#include <utility>

#include "common/text.hpp"

namespace rdma_exporter {
namespace {

std::string shortest_digits(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, ec == std::errc() ? end : buf);
}

}  // namespace

const JsonWriter::Numbers JsonWriter::kShortestNumbers{shortest_digits, "NaN", "Infinity",
                                                       "-Infinity"};

JsonWriter::JsonWriter(Numbers numbers) : numbers_(numbers) {}

void JsonWriter::begin_object() {
  before_value();
  out_.push_back('{');
  first_.push_back(true);
}

void JsonWriter::end_object() {
  out_.push_back('}');
  first_.pop_back();
}

void JsonWriter::begin_array() {
  before_value();
  out_.push_back('[');
  first_.push_back(true);
}

void JsonWriter::end_array() {
  out_.push_back(']');
  first_.pop_back();
}

void JsonWriter::key(std::string_view k) {
  before_value();
  out_ += json_quote(k);
  out_.push_back(':');
  after_key_ = true;
}

void JsonWriter::string(std::string_view s) {
  before_value();
  out_ += json_quote(s);
}

void JsonWriter::boolean(bool v) {
  before_value();
  out_.append(v ? "true" : "false");
}

void JsonWriter::integer(uint64_t v) {
  before_value();
  out_.append(std::to_string(v));
}

void JsonWriter::number(double v) {
  if (std::isnan(v)) return string(numbers_.nan);
  if (std::isinf(v)) return string(v > 0 ? numbers_.positive_infinity : numbers_.negative_infinity);
  before_value();
  out_.append(numbers_.finite(v));
}

std::string JsonWriter::take() {
  first_.clear();
  after_key_ = false;
  return std::exchange(out_, {});
}

// A value right after its key goes as it is; any other one is separated
// from the value before it in the same object or array.
void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (first_.empty()) return;
  if (!first_.back()) out_.push_back(',');
  first_.back() = false;
}

}  // namespace rdma_exporter
