#pragma once

#include <string>

namespace rdma_exporter {

// This host's name as gethostname(2) gives it; empty when it cannot be read.
// The OTLP resource's host.name and the probe's own entry in a pinglist
// both come from here.
std::string host_name();

}  // namespace rdma_exporter
