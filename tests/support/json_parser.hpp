#pragma once

// A strict RFC 8259 JSON parser for tests, independent of the exporter's
// writer: any syntax error (and a duplicate key) fails the running test.
// Numbers are read as doubles; \u escapes only for ASCII.

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rdma_exporter::testing {

struct Json;
using JsonObject = std::map<std::string, Json>;
using JsonArray = std::vector<Json>;

// A parsed value. Looking up what is not there gives a null value, so
// lookups chain: j["a"][0]["b"].
struct Json {
  std::variant<std::nullptr_t, bool, double, std::string, JsonArray, JsonObject> v;

  const Json& operator[](const std::string& key) const;
  const Json& operator[](std::size_t index) const;
  std::size_t size() const;  // of an array or object; 0 for the rest
  bool has(const std::string& key) const;
  std::string str() const;  // "<not a string>" for the rest
  double num() const;       // NaN for the rest
  bool boolean() const;     // false for the rest
};

Json parse_json(std::string_view text);

}  // namespace rdma_exporter::testing
