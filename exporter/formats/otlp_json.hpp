#pragma once

// OTLP/HTTP's JSON encoding (the protobuf JSON mapping of the same request):
// lowerCamelCase keys, 64-bit integers as decimal strings, enums as numbers,
// doubles that are not finite as "NaN", "Infinity", "-Infinity".

#include <prometheus/metric_family.h>

#include <string>
#include <vector>

#include "exporter/formats/otlp_model.hpp"

namespace rdma_exporter {

std::string encode_otlp_json(const OtlpRequest& request);

// The request otlp_request() makes of the families.
std::string encode_otlp_json(const std::vector<prometheus::MetricFamily>& families,
                             const OtlpEncodeContext& context);

}  // namespace rdma_exporter
