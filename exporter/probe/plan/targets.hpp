#pragma once

#include <string>
#include <vector>

#include "common/result.hpp"
#include "exporter/probe/plan/options.hpp"

namespace rdma_exporter::probe {

// "host:port" or "[v6]:port" with a host and a non-zero port.
bool valid_target_address(const std::string& address);

// Why a target label name is unusable ("" when fine): it must be a valid
// Prometheus label name and not one the probe's series already carry.
std::string target_label_problem(const std::string& name);

// Parses a file in Prometheus file_sd format (a JSON or YAML list of
// {targets: [host:port...], labels: {name: value}}). Labels whose names
// start with "__" are meta labels and are dropped. Any other problem fails
// the whole file, naming it.
Result<std::vector<Target>> parse_file_sd(const std::string& text, const std::string& source);

// The address a target is known by: "host:port" with an IP address written
// the one way (IPv6 in brackets, lower case, shortest form) and a host name
// in lower case. The same host listed twice under one spelling or another
// is one target.
std::string target_key(const std::string& address);

// One target per address: of the entries with the same target_key, the
// first in `entries`' order is kept, with its labels, classes and rail. A
// later entry that differs in those is ignored, its address listed in
// `conflicting` (sorted, once), so that it can be warned about.
struct TargetSelection {
  std::vector<std::size_t> kept;  // indexes into the entries, in order
  std::vector<std::string> conflicting;
};
TargetSelection first_per_address(const std::vector<Target>& entries);

}  // namespace rdma_exporter::probe
