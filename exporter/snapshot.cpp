#include "exporter/snapshot.hpp"

namespace rdma_exporter {

bool Snapshot::all_succeeded() const {
  for (const auto& o : outcomes) {
    if (!o.errors.empty()) return false;
  }
  return true;
}

}  // namespace rdma_exporter
