#pragma once

// OTLP/HTTP's protobuf encoding: an
// opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest.

#include <prometheus/metric_family.h>

#include <string>
#include <vector>

#include "exporter/formats/otlp_model.hpp"

namespace rdma_exporter {

std::string encode_otlp_protobuf(const OtlpRequest& request);

// The request otlp_request() makes of the families.
std::string encode_otlp_protobuf(const std::vector<prometheus::MetricFamily>& families,
                                 const OtlpEncodeContext& context);

}  // namespace rdma_exporter
