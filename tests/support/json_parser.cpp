#include "tests/support/json_parser.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>

namespace rdma_exporter::testing {
namespace {

const Json kMissing;

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : s_(text) {}
  Json parse() {
    Json j = value();
    ws();
    if (i_ != s_.size()) fail("trailing text");
    return j;
  }

 private:
  void fail(const std::string& what) {
    if (!failed_) ADD_FAILURE() << "JSON: " << what << " at offset " << i_;
    failed_ = true;
    i_ = s_.size();
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r'))
      ++i_;
  }
  bool eat(char c) {
    ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  Json value() {
    ws();
    if (i_ >= s_.size()) {
      fail("unexpected end");
      return {};
    }
    const char c = s_[i_];
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return Json{string()};
    if (s_.substr(i_, 4) == "true") return i_ += 4, Json{true};
    if (s_.substr(i_, 5) == "false") return i_ += 5, Json{false};
    if (s_.substr(i_, 4) == "null") return i_ += 4, Json{nullptr};
    return number();
  }
  Json object() {
    ++i_;
    JsonObject o;
    if (eat('}')) return Json{o};
    do {
      ws();
      if (i_ >= s_.size() || s_[i_] != '"') {
        fail("expected a key");
        return {};
      }
      std::string k = string();
      if (!eat(':')) fail("expected :");
      if (o.count(k)) fail("duplicate key " + k);
      o[k] = value();
    } while (eat(','));
    if (!eat('}')) fail("expected }");
    return Json{o};
  }
  Json array() {
    ++i_;
    JsonArray a;
    if (eat(']')) return Json{a};
    do {
      a.push_back(value());
    } while (eat(','));
    if (!eat(']')) fail("expected ]");
    return Json{a};
  }
  std::string string() {
    ++i_;
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c < 0x20) {
        fail("raw control character in a string");
        return out;
      }
      if (c != '\\') {
        out.push_back(s_[i_++]);
        continue;
      }
      if (++i_ >= s_.size()) break;
      const char e = s_[i_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out.push_back(e);
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'u': {
          if (i_ + 4 > s_.size()) return fail("short \\u"), out;
          const unsigned cp = std::stoul(std::string(s_.substr(i_, 4)), nullptr, 16);
          i_ += 4;
          if (cp >= 0x80) return fail("test reader handles only ASCII \\u escapes"), out;
          out.push_back(static_cast<char>(cp));
          break;
        }
        default:
          fail("bad escape");
          return out;
      }
    }
    if (i_ >= s_.size()) fail("unterminated string");
    ++i_;
    return out;
  }
  Json number() {
    static const std::regex re(R"(-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?)");
    std::cmatch m;
    const char* begin = s_.data() + i_;
    if (!std::regex_search(begin, s_.data() + s_.size(), m, re,
                           std::regex_constants::match_continuous)) {
      fail("bad value");
      return {};
    }
    i_ += m.length(0);
    return Json{std::stod(m.str(0))};
  }

  std::string_view s_;
  std::size_t i_ = 0;
  bool failed_ = false;
};

}  // namespace

const Json& Json::operator[](const std::string& key) const {
  const auto* o = std::get_if<JsonObject>(&v);
  if (o == nullptr) return kMissing;
  auto it = o->find(key);
  return it == o->end() ? kMissing : it->second;
}

const Json& Json::operator[](std::size_t index) const {
  const auto* a = std::get_if<JsonArray>(&v);
  return a != nullptr && index < a->size() ? (*a)[index] : kMissing;
}

std::size_t Json::size() const {
  if (const auto* a = std::get_if<JsonArray>(&v)) return a->size();
  if (const auto* o = std::get_if<JsonObject>(&v)) return o->size();
  return 0;
}

bool Json::has(const std::string& key) const {
  const auto* o = std::get_if<JsonObject>(&v);
  return o != nullptr && o->count(key) != 0;
}

std::string Json::str() const {
  const auto* s = std::get_if<std::string>(&v);
  return s ? *s : "<not a string>";
}

double Json::num() const {
  const auto* d = std::get_if<double>(&v);
  return d ? *d : std::nan("");
}

bool Json::boolean() const {
  const auto* b = std::get_if<bool>(&v);
  return b != nullptr && *b;
}

Json parse_json(std::string_view text) {
  return JsonParser(text).parse();
}

}  // namespace rdma_exporter::testing
