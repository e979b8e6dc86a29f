#pragma once

// Loading YAML text that may be anything: a file rewritten, truncated or
// overwritten with bytes that are not text.

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <string_view>

namespace rdma_exporter {

// Where `text` first holds what a YAML stream may not (YAML 1.2, 5.1: tab,
// line feed, carriage return, printable ASCII, NEL and the printable
// Unicode characters, in well-formed UTF-8), with line and column counted
// from 0 in characters; nullopt when it holds none.
struct YamlTextProblem {
  YAML::Mark mark;
  std::string what;
};
std::optional<YamlTextProblem> yaml_text_problem(std::string_view text);

// YAML::Load, refusing first what yaml_text_problem() finds by throwing
// YAML::ParserException at its mark. yaml-cpp reads such bytes without
// complaint, and binary garbage can load as an empty document ("%\x01" is
// an unknown directive and nothing else), which a caller would take for an
// empty file.
YAML::Node load_yaml(const std::string& text);

}  // namespace rdma_exporter
