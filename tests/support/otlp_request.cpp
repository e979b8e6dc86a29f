#include "tests/support/otlp_request.hpp"

#include <gtest/gtest.h>

#include "tests/support/protobuf_decoder.hpp"

namespace rdma_exporter::testing {

DecodedRequest decode_request(std::string bytes) {
  DecodedRequest d;
  d.body = std::make_shared<const std::string>(std::move(bytes));
  const std::string_view body = *d.body;
  const auto rm = pb_one(body, 1, 2).bytes;  // ExportMetricsServiceRequest.resource_metrics
  d.resource = pb_attributes(pb_one(rm, 1, 2).bytes, 1);
  const auto sm = pb_one(rm, 2, 2).bytes;  // ResourceMetrics.scope_metrics
  const auto scope = pb_one(sm, 1, 2).bytes;
  d.scope_name = std::string(pb_one(scope, 1, 2).bytes);
  d.scope_version = std::string(pb_one(scope, 2, 2).bytes);
  for (const auto& m : pb_all(sm, 2)) {
    EXPECT_EQ(m.wire, 2);
    d.metrics[std::string(pb_one(m.bytes, 1, 2).bytes)] = m.bytes;
  }
  return d;
}

}  // namespace rdma_exporter::testing
