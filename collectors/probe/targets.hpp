#pragma once

#include <string>
#include <vector>

#include "collectors/probe/options.hpp"
#include "common/result.hpp"

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

}  // namespace rdma_exporter::probe
