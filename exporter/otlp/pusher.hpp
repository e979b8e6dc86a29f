#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/backoff.hpp"
#include "common/metric_sink.hpp"
#include "exporter/formats/otlp_model.hpp"
#include "exporter/otlp/export_outcome.hpp"
#include "exporter/otlp/http_client.hpp"
#include "exporter/otlp/options.hpp"
#include "exporter/otlp/payload_queue.hpp"
#include "exporter/snapshot.hpp"

namespace rdma_exporter {

// The resource, scope and times an export carries: service.name,
// service.version, host.name and the configured attributes; the process
// start as the start of every cumulative series; now as the time.
OtlpEncodeContext otlp_context(const OtlpOptions& options);

// Pushes the exporter's metric families to an OTLP/HTTP receiver on a thread
// of its own: every `interval` it fetches a snapshot, encodes it and queues
// the payload (OtlpPayloadQueue); the oldest queued payload is sent until the
// receiver takes it. What each answer means, and how long to wait before a
// retry, is decided in export_outcome.hpp; the backoff is common/backoff.
//
// - 2xx: sent; the next queued payload goes at once (the queue drains in
//   order, so points collected during a short outage still arrive).
// - 429, 502, 503, 504, network errors (no connection, no answer within
//   `timeout`) and TLS errors (https://: the handshake failed, e.g. the
//   receiver's certificate was refused): the payload is retried after an exponential backoff with
//   jitter (1s, 2s, 4s, ... up to `max_backoff`), or after Retry-After
//   seconds when the receiver asks for longer (also capped by `max_backoff`).
// - any other status: the receiver will never take this payload; it is
//   dropped (counted as permanent_error) and the next one goes.
// - the queue holds at most `queue_size` payloads; when full the oldest is
//   dropped and counted. Values are cumulative, so the first push after an
//   outage carries everything that happened during it.
//
// A snapshot already pushed (the cache serves a collection again within its
// max_age) is not pushed twice; the pusher looks again a tenth of an
// interval later.
//
// A receiver that is down or slow only ever blocks this thread.
class OtlpPusher {
 public:
  // Must return within a bounded time; nullptr or an empty snapshot means
  // nothing to send this time. Called on the pusher's thread only.
  using FetchSnapshot = std::function<std::shared_ptr<const Snapshot>()>;

  OtlpPusher(OtlpOptions options, FetchSnapshot fetch_snapshot);
  ~OtlpPusher();  // stop()
  OtlpPusher(const OtlpPusher&) = delete;
  OtlpPusher& operator=(const OtlpPusher&) = delete;

  // Starts the thread; the first collection is pushed right away.
  void start();
  // Asks the thread to finish: a request in flight is abandoned and queued
  // payloads are discarded. Returns at once; safe from any thread.
  void request_stop();
  // request_stop(), then waits for the thread. Prompt unless the thread is
  // inside fetch_snapshot, which it finishes first.
  void stop();

  // Self metrics (rdma_exporter_otlp_*); thread-safe.
  void add_metrics(MetricSink& sink) const;

 private:
  void run();
  bool collect();  // true when the snapshot was the one pushed last
  void send();
  // Logs how a request ended when it differs from how the last one did.
  void log_outcome(OtlpExportOutcome outcome, const OtlpHttpResult& result,
                   std::size_t payload_bytes);
  void note(const std::string& state, const std::string& message, bool warn);

  const OtlpOptions options_;
  const FetchSnapshot fetch_;
  OtlpEndpoint endpoint_;
  OtlpEncodeContext context_;
  OtlpHttpClient::Headers headers_;
  std::string tls_problem_;  // https:// with TLS files that could not be used
  OtlpHttpClient client_;
  std::thread thread_;

  // Shared with request_stop() and add_metrics().
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  OtlpPayloadQueue queue_;
  uint64_t results_[kOtlpExportOutcomes] = {};  // by OtlpExportOutcome
  double last_success_ = 0;

  // The pusher thread's own state.
  std::chrono::steady_clock::time_point last_taken_{};
  std::chrono::steady_clock::time_point retry_at_{};
  Backoff backoff_;
  std::string state_;  // last logged outcome, so each change is logged once
};

}  // namespace rdma_exporter
