#include "common/yaml_text.hpp"

#include <cstdint>
#include <cstdio>

#include "common/text.hpp"

namespace rdma_exporter {
namespace {

// The code point of the well-formed sequence of `n` bytes at text[i].
std::uint32_t code_point(std::string_view text, std::size_t i, std::size_t n) {
  const auto at = [&](std::size_t k) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(text[k]));
  };
  if (n == 1) return at(i);
  static constexpr std::uint32_t kLeadMask[] = {0, 0, 0x1f, 0x0f, 0x07};
  std::uint32_t cp = at(i) & kLeadMask[n];
  for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (at(i + k) & 0x3f);
  return cp;
}

// YAML 1.2 c-printable.
bool printable(std::uint32_t c) {
  return c == 0x09 || c == 0x0a || c == 0x0d || (c >= 0x20 && c <= 0x7e) || c == 0x85 ||
         (c >= 0xa0 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd) ||
         (c >= 0x10000 && c <= 0x10ffff);
}

}  // namespace

std::optional<YamlTextProblem> yaml_text_problem(std::string_view text) {
  YAML::Mark mark;
  for (std::size_t i = 0; i < text.size();) {
    mark.pos = static_cast<int>(i);
    const std::size_t n = utf8_length(text, i);
    char what[64];
    if (n == 0) {
      std::snprintf(what, sizeof what, "byte 0x%02x is not UTF-8: not a text file",
                    static_cast<unsigned char>(text[i]));
      return YamlTextProblem{mark, what};
    }
    const std::uint32_t c = code_point(text, i, n);
    if (!printable(c)) {
      std::snprintf(what, sizeof what, "character U+%04X is not allowed in YAML: not a text file",
                    static_cast<unsigned>(c));
      return YamlTextProblem{mark, what};
    }
    // A line ends at a line feed, or a carriage return not followed by one.
    if (c == 0x0a || (c == 0x0d && (i + 1 == text.size() || text[i + 1] != '\n'))) {
      ++mark.line;
      mark.column = 0;
    } else {
      ++mark.column;
    }
    i += n;
  }
  return std::nullopt;
}

YAML::Node load_yaml(const std::string& text) {
  if (auto problem = yaml_text_problem(text)) {
    throw YAML::ParserException(problem->mark, problem->what);
  }
  return YAML::Load(text);
}

}  // namespace rdma_exporter
