#include "collectors/device_filter.hpp"

#include <algorithm>

#include "common/pattern.hpp"

namespace rdma_exporter {
namespace {

Result<Pattern> compile(const std::string& pattern) {
  auto compiled = Pattern::compile(pattern);
  if (compiled) return compiled;
  // A pattern past the size limit is not repeated in the message.
  if (pattern.size() > kMaxPatternBytes) {
    return Error{EINVAL, "invalid device pattern: " + compiled.error().message};
  }
  return Error{EINVAL, "invalid device pattern \"" + pattern + "\": " + compiled.error().message};
}

}  // namespace

Status check_device_pattern(const std::string& pattern) {
  auto r = compile(pattern);
  if (!r) return r.error();
  return ok_status();
}

Result<DeviceFilter> DeviceFilter::make(const std::vector<std::string>& include,
                                        const std::vector<std::string>& exclude) {
  DeviceFilter f;
  for (const auto& p : include) {
    auto r = compile(p);
    if (!r) return r.error();
    f.include_.push_back(std::move(r).value());
  }
  for (const auto& p : exclude) {
    auto r = compile(p);
    if (!r) return r.error();
    f.exclude_.push_back(std::move(r).value());
  }
  return f;
}

bool DeviceFilter::allows(const std::string& device) const {
  auto matches = [&](const Pattern& p) { return p.matches(device); };
  if (!include_.empty() && std::none_of(include_.begin(), include_.end(), matches)) return false;
  return std::none_of(exclude_.begin(), exclude_.end(), matches);
}

std::string device_pattern_problem(const std::string& pattern) {
  Status s = check_device_pattern(pattern);
  return s ? std::string() : s.error().message;
}

}  // namespace rdma_exporter
