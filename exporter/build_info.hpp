#pragma once

namespace rdma_exporter {

// The version and the source revision the exporter was built from.
const char* exporter_version();
const char* exporter_revision();

}  // namespace rdma_exporter
