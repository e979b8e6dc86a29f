#include "exporter/build_info.hpp"

#ifndef RDMA_EXPORTER_VERSION
#define RDMA_EXPORTER_VERSION "unknown"
#endif
#ifndef RDMA_EXPORTER_REVISION
#define RDMA_EXPORTER_REVISION "unknown"
#endif

namespace rdma_exporter {

const char* exporter_version() {
  return RDMA_EXPORTER_VERSION;
}
const char* exporter_revision() {
  return RDMA_EXPORTER_REVISION;
}

}  // namespace rdma_exporter
