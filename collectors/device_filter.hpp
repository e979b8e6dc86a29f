#pragma once

#include <string>
#include <vector>

#include "common/pattern.hpp"
#include "common/result.hpp"

namespace rdma_exporter {

// Which devices are read at all. A device is read when it matches an include
// pattern (or there are none) and matches no exclude pattern. Patterns are
// RE2 regular expressions (common/pattern.hpp) matched against the whole
// device name. The filter applies before any read of a device, since reading
// some firmware-restricted functions floods the kernel log.
class DeviceFilter {
 public:
  DeviceFilter() = default;
  static Result<DeviceFilter> make(const std::vector<std::string>& include,
                                   const std::vector<std::string>& exclude);
  bool allows(const std::string& device) const;

 private:
  std::vector<Pattern> include_;
  std::vector<Pattern> exclude_;
};

// Validates one pattern; the error text says what is wrong with it.
Status check_device_pattern(const std::string& pattern);
// The same as a message for the configuration walker: "" when valid.
std::string device_pattern_problem(const std::string& pattern);

}  // namespace rdma_exporter
