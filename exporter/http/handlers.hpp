#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "exporter/http/router.hpp"
#include "exporter/snapshot_cache.hpp"

namespace rdma_exporter {

// Runs a configuration reload and calls the given function with success and
// a message once it is done.
using ReloadHook = std::function<void(std::function<void(bool, std::string)>)>;

// The exporter's routes:
//   GET, HEAD  /metrics   the cache's snapshot, gzip when the client accepts it;
//                         at `telemetry_path` (web.telemetry_path)
//   GET, HEAD  /          a landing page linking to the metrics
//   GET, HEAD  /healthz   "OK"
//   POST, PUT  /-/reload  runs `reload`; without one (web.enable_lifecycle
//                         off), every method is answered 403.
// `cache` must outlive the router.
std::shared_ptr<const HttpRouter> exporter_routes(SnapshotCache& cache, const ReloadHook& reload,
                                                  const std::string& telemetry_path = "/metrics");

// Whether an Accept-Encoding header value admits gzip.
bool accepts_gzip(std::string_view header);

}  // namespace rdma_exporter
