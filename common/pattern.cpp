#include "common/pattern.hpp"

#include <re2/re2.h>

#include <algorithm>

namespace rdma_exporter {
namespace {

RE2::Options pattern_options() {
  RE2::Options o;
  o.set_encoding(RE2::Options::EncodingLatin1);  // bytes: names need not be UTF-8
  o.set_log_errors(false);                       // the error goes to the caller
  return o;
}

// True when the pattern holds \1 to \9 outside \Q...\E: a back-reference in
// the dialects that have them, which RE2 does not (it reads \12 as an octal
// escape, so a pattern written for another dialect would silently mean
// something else).
bool has_back_reference(const std::string& pattern) {
  for (std::size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '\\') continue;
    const char next = pattern[i + 1];
    if (next >= '1' && next <= '9') return true;
    if (next == 'Q') {
      const std::size_t end = pattern.find("\\E", i + 2);
      if (end == std::string::npos) return false;
      i = end + 1;
      continue;
    }
    ++i;  // the escaped character
  }
  return false;
}

}  // namespace

std::string pattern_limit_problem(const std::string& pattern) {
  if (pattern.size() > kMaxPatternBytes) {
    return "a pattern of " + std::to_string(pattern.size()) + " bytes, more than the " +
           std::to_string(kMaxPatternBytes) + " allowed";
  }
  bool in_class = false;  // inside [...], where a brace is literal
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      ++i;  // an escaped character opens nothing
    } else if (in_class) {
      if (c == ']') in_class = false;
    } else if (c == '[') {
      in_class = true;
      // A ']' right after '[' or '[^' is a member, not the end.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') ++i;
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') ++i;
    } else if (c == '{') {
      // Every count in the braces, capped before it can overflow.
      for (std::size_t j = i + 1;
           j < pattern.size() && (pattern[j] == ',' || (pattern[j] >= '0' && pattern[j] <= '9'));
           ++j) {
        std::size_t count = 0;
        for (; j < pattern.size() && pattern[j] >= '0' && pattern[j] <= '9'; ++j) {
          count = std::min<std::size_t>(count * 10 + static_cast<std::size_t>(pattern[j] - '0'),
                                        kMaxPatternRepeat + 1);
        }
        if (count > kMaxPatternRepeat) {
          return "a repeat count above the " + std::to_string(kMaxPatternRepeat) + " allowed";
        }
        if (j >= pattern.size() || pattern[j] != ',') break;
      }
    }
  }
  return {};
}

Pattern::Pattern() {
  static const auto everything = std::make_shared<const RE2>("(?s).*", pattern_options());
  re_ = everything;
}

Result<Pattern> Pattern::compile(const std::string& pattern) {
  if (std::string problem = pattern_limit_problem(pattern); !problem.empty()) {
    return Error{EINVAL, problem};
  }
  if (has_back_reference(pattern)) {
    return Error{EINVAL,
                 "back-references (\\1 to \\9) are not supported (RE2 syntax); a character by "
                 "its code is written \\x41"};
  }
  auto re = std::make_shared<const RE2>(pattern, pattern_options());
  if (!re->ok()) return Error{EINVAL, re->error()};
  return Pattern(std::move(re));
}

Pattern Pattern::checked(const std::string& pattern) {
  auto compiled = compile(pattern);
  if (compiled) return std::move(compiled).value();
  static const auto nothing = std::make_shared<const RE2>("[^\\x00-\\xff]", pattern_options());
  return Pattern(nothing);
}

bool Pattern::matches(std::string_view name) const {
  return RE2::FullMatch(re2::StringPiece(name.data(), name.size()), *re_);
}

bool Pattern::matches(std::string_view name, std::string& first_group) const {
  first_group.clear();
  const re2::StringPiece text(name.data(), name.size());
  if (re_->NumberOfCapturingGroups() < 1) return RE2::FullMatch(text, *re_);
  re2::StringPiece group;
  if (!RE2::FullMatch(text, *re_, &group)) return false;
  if (group.data() != nullptr) first_group.assign(group.data(), group.size());
  return true;
}

int Pattern::capture_groups() const {
  return re_->NumberOfCapturingGroups();
}

const std::string& Pattern::text() const {
  return re_->pattern();
}

}  // namespace rdma_exporter
