#include "exporter/formats/text.hpp"

#include <prometheus/text_serializer.h>

#include <sstream>

namespace rdma_exporter {

std::string render_text(const std::vector<prometheus::MetricFamily>& families) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace rdma_exporter
