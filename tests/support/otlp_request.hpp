#pragma once

// An OTLP ExportMetricsServiceRequest in protobuf, read back with the test
// protobuf decoder: the resource, the scope and each Metric message by name.

#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace rdma_exporter::testing {

struct DecodedRequest {
  std::shared_ptr<const std::string> body;  // the views below point into it
  std::map<std::string, std::string> resource;
  std::string scope_name;
  std::string scope_version;
  std::map<std::string, std::string_view> metrics;  // name -> Metric message
};

// One resource with one scope is expected; anything else fails the test.
DecodedRequest decode_request(std::string bytes);

}  // namespace rdma_exporter::testing
