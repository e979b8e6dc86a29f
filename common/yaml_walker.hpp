#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/duration.hpp"

namespace rdma_exporter {

// `child` under `parent` ("web.tls" and "cert" make "web.tls.cert"); `child`
// alone at the top level (parent "").
inline std::string key_path(const std::string& parent, const std::string& child) {
  std::string path = parent;
  if (!path.empty()) path += '.';
  path += child;
  return path;
}

// Walks a YAML document against the expected shape, collecting one message
// per problem instead of stopping at the first.
class Walker {
 public:
  explicit Walker(std::string source) : source_(std::move(source)) {}

  using Field = std::function<void(const YAML::Node&, const std::string&)>;

  // Made before reading a part of the document; failed() tells whether any
  // error was recorded since, so checks that combine fields run only on
  // fields that were read without a problem. take() does not reset it.
  class Section {
   public:
    bool failed() const { return walker_->recorded_ != start_; }

   private:
    friend class Walker;
    explicit Section(const Walker& w) : walker_(&w), start_(w.recorded_) {}
    const Walker* walker_;
    std::size_t start_;
  };

  Section section() const { return Section(*this); }

  void error(const YAML::Mark& mark, const std::string& key, const std::string& what) {
    std::ostringstream line;
    line << source_;
    if (mark.line >= 0) line << ':' << mark.line + 1 << ':' << mark.column + 1;
    line << ": " << key << ": " << what;
    errors_.push_back(line.str());
    ++recorded_;
  }

  void mapping(const YAML::Node& node, const std::string& path,
               const std::map<std::string, Field>& fields) {
    if (node.IsNull()) return;  // "web:" with nothing below keeps the defaults
    if (!node.IsMap()) {
      error(node.Mark(), path.empty() ? "(top level)" : path, "expected a mapping of keys");
      return;
    }
    for (const auto& kv : node) {
      const std::string key = kv.first.Scalar();
      const std::string full = key_path(path, key);
      auto it = fields.find(key);
      if (it == fields.end()) {
        std::string known;
        for (const auto& f : fields) {
          if (!known.empty()) known += ", ";
          known += f.first;
        }
        error(kv.first.Mark(), full, "unknown key (expected one of: " + known + ")");
        continue;
      }
      it->second(kv.second, full);
    }
  }

  Field string(std::string& out) {
    return [this, &out](const YAML::Node& n, const std::string& key) {
      if (!n.IsScalar()) return error(n.Mark(), key, "expected a string");
      out = n.Scalar();
    };
  }

  // An integer from `min` to `max` into any integer type or an optional of
  // one. A value out of range or not an integer is reported and leaves
  // `out` as it was.
  template <typename T>
  Field integer(T& out, long long min, long long max) {
    return [this, &out, min, max](const YAML::Node& n, const std::string& key) {
      using Value = typename optional_value<T>::type;
      // Bounds wider than the type are clipped to it: nothing is truncated.
      const long long lo = std::max(min, static_cast<long long>(std::numeric_limits<Value>::min()));
      const long long hi =
          std::in_range<long long>(std::numeric_limits<Value>::max())
              ? std::min(max, static_cast<long long>(std::numeric_limits<Value>::max()))
              : max;
      if (auto v = integer_value(n, key, lo, hi)) out = static_cast<Value>(*v);
    };
  }

  Field boolean(bool& out) {
    return [this, &out](const YAML::Node& n, const std::string& key) {
      if (!n.IsScalar() || !YAML::convert<bool>::decode(n, out)) {
        error(n.Mark(), key, "expected true or false");
      }
    };
  }

  Field duration(Duration& out) {
    return [this, &out](const YAML::Node& n, const std::string& key) {
      if (!n.IsScalar() || !parse_duration(n.Scalar(), out)) {
        error(n.Mark(), key,
              "expected a duration such as 500ms, 10s, 1m30s, got \"" +
                  (n.IsScalar() ? n.Scalar() : std::string("(not a scalar)")) + "\"");
      }
    };
  }

  Field string_list(std::vector<std::string>& out,
                    const std::function<std::string(const std::string&)>& check = nullptr) {
    return [this, &out, check](const YAML::Node& n, const std::string& key) {
      if (n.IsNull()) {
        out.clear();
        return;
      }
      if (!n.IsSequence()) return error(n.Mark(), key, "expected a list of strings");
      out.clear();
      for (const auto& item : n) {
        if (!item.IsScalar()) {
          error(item.Mark(), key, "expected a string in the list");
          continue;
        }
        if (check) {
          if (std::string problem = check(item.Scalar()); !problem.empty()) {
            error(item.Mark(), key, problem);
            continue;
          }
        }
        out.push_back(item.Scalar());
      }
    };
  }

  Field optional_string(std::optional<std::string>& out,
                        const std::function<std::string(const std::string&)>& check = nullptr) {
    return [this, &out, check](const YAML::Node& n, const std::string& key) {
      if (!n.IsScalar()) return error(n.Mark(), key, "expected a string");
      if (check) {
        if (std::string problem = check(n.Scalar()); !problem.empty()) {
          return error(n.Mark(), key, problem);
        }
      }
      out = n.Scalar();
    };
  }

  // A list of mappings, each read by `item` into a new element of `out`.
  template <typename T>
  Field list_of(std::vector<T>& out,
                std::function<void(const YAML::Node&, const std::string&, T&)> item) {
    return [this, &out, item](const YAML::Node& n, const std::string& key) {
      if (n.IsNull()) return out.clear();
      if (!n.IsSequence()) return error(n.Mark(), key, "expected a list");
      out.clear();
      for (std::size_t i = 0; i < n.size(); ++i) {
        T value{};
        item(n[i], key + "[" + std::to_string(i) + "]", value);
        out.push_back(std::move(value));
      }
    };
  }

  Field optional_string_into(std::string& out,
                             const std::function<std::string(const std::string&)>& check) {
    return [this, &out, check](const YAML::Node& n, const std::string& key) {
      if (!n.IsScalar()) return error(n.Mark(), key, "expected a string");
      if (std::string problem = check(n.Scalar()); !problem.empty()) {
        return error(n.Mark(), key, problem);
      }
      out = n.Scalar();
    };
  }

  void error_at(const YAML::Node& n, const std::string& key, const std::string& what) {
    error(n.Mark(), key, what);
  }

  std::vector<std::string> take() { return std::move(errors_); }

 private:
  template <typename T>
  struct optional_value {
    using type = T;
  };
  template <typename T>
  struct optional_value<std::optional<T>> {
    using type = T;
  };

  std::optional<long long> integer_value(const YAML::Node& n, const std::string& key, long long min,
                                         long long max) {
    const std::string expected =
        "expected an integer from " + std::to_string(min) + " to " + std::to_string(max);
    if (!n.IsScalar()) {
      error(n.Mark(), key, expected);
      return std::nullopt;
    }
    const std::string& s = n.Scalar();
    long long v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || v < min || v > max) {
      error(n.Mark(), key, expected + ", got \"" + s + "\"");
      return std::nullopt;
    }
    return v;
  }

  std::string source_;
  std::vector<std::string> errors_;
  std::size_t recorded_ = 0;  // every error ever recorded, also those taken
};

// "" when `value` is one of `allowed`, else a message listing them.
inline std::string one_of(const std::string& value, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return {};
    if (!list.empty()) list += ", ";
    list += a;
  }
  return "expected one of " + list + ", got \"" + value + "\"";
}

}  // namespace rdma_exporter
