#include "exporter/otlp/pusher.hpp"

#include <time.h>

#include <algorithm>
#include <iterator>

#include "common/host_name.hpp"
#include "common/log.hpp"
#include "exporter/build_info.hpp"
#include "exporter/formats/gzip.hpp"
#include "exporter/formats/otlp_json.hpp"
#include "exporter/formats/otlp_protobuf.hpp"
#include "exporter/otlp/tls.hpp"
#include "exporter/process_metrics.hpp"

namespace rdma_exporter {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kInitialBackoff{1000};

uint64_t clock_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t unix_now_ns() {
  return clock_ns(CLOCK_REALTIME);
}

std::string excerpt(std::string body) {
  for (char& c : body) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return body.size() > 200 ? body.substr(0, 200) + "..." : body;
}

bool is_process_family(const prometheus::MetricFamily& f) {
  return f.name.starts_with("process_");
}

}  // namespace

OtlpPusher::OtlpPusher(OtlpOptions options, FetchSnapshot fetch_snapshot)
    : options_(std::move(options)),
      fetch_(std::move(fetch_snapshot)),
      endpoint_([this] {
        OtlpEndpoint e;
        parse_otlp_endpoint(options_.endpoint, e);  // validated with the configuration
        return e;
      }()),
      client_(endpoint_,
              [this]() -> std::shared_ptr<boost::asio::ssl::context> {
                if (!endpoint_.tls) return nullptr;
                // Checked with the configuration; files changed since then
                // fail every push (counted as tls_error) rather than the
                // daemon.
                auto ctx = make_otlp_tls_context(options_);
                if (!ctx) {
                  tls_problem_ = ctx.error().message;
                  return nullptr;
                }
                return *ctx;
              }()),
      queue_(options_.queue_size),
      // Jitter: between half and all of the delay, so exporters restarted
      // together do not retry in step.
      backoff_({kInitialBackoff, options_.max_backoff, 0.5, 1.0}) {
  context_ = otlp_context(options_);

  const bool json = options_.encoding == OtlpOptions::Encoding::json;
  headers_ = {{"Content-Type", json ? "application/json" : "application/x-protobuf"},
              {"User-Agent", std::string("rdma_exporter/") + exporter_version()}};
  if (options_.compression == OtlpOptions::Compression::gzip) {
    headers_.emplace_back("Content-Encoding", "gzip");
  }
  for (const auto& h : options_.headers) headers_.push_back(h);
}

OtlpPusher::~OtlpPusher() {
  stop();
}

void OtlpPusher::start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
  }
  log::info("pushing metrics over OTLP",
            {{"endpoint", options_.endpoint},
             {"interval", std::to_string(options_.interval.count()) + "ms"}});
  thread_ = std::thread([this] { run(); });
}

void OtlpPusher::request_stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  client_.abort();
}

void OtlpPusher::stop() {
  request_stop();
  if (thread_.joinable()) thread_.join();
}

void OtlpPusher::run() {
  auto next_collect = Clock::now();
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    auto now = Clock::now();
    if (now >= next_collect) {
      lock.unlock();
      const bool served_again = collect();
      lock.lock();
      now = Clock::now();
      if (served_again) {
        // The cache gave the collection already pushed (its max_age is not
        // over): look again shortly rather than a whole interval later.
        next_collect =
            now + std::clamp(options_.interval / 10, milliseconds(10), milliseconds(1000));
        continue;
      }
      next_collect += options_.interval;
      if (next_collect <= now) next_collect = now + options_.interval;  // fell behind: skip
      continue;
    }
    if (!queue_.empty() && now >= retry_at_) {
      lock.unlock();
      send();
      lock.lock();
      continue;
    }
    auto until = next_collect;
    if (!queue_.empty()) until = std::min(until, retry_at_);
    wake_.wait_until(lock, until, [this] { return stopping_; });
  }
  queue_.clear();
}

bool OtlpPusher::collect() {
  std::shared_ptr<const Snapshot> snapshot;
  try {
    snapshot = fetch_();
  } catch (const std::exception& e) {
    log::warn("OTLP push: collecting failed", {{"err", e.what()}});
    return false;
  }
  if (!snapshot || snapshot->families.empty()) return false;
  // The same collection again: nothing new to say.
  if (snapshot->taken == last_taken_) return true;
  last_taken_ = snapshot->taken;

  OtlpEncodeContext context = context_;
  const auto age =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - snapshot->taken);
  const uint64_t now = unix_now_ns();
  const uint64_t age_ns = age.count() > 0 ? static_cast<uint64_t>(age.count()) : 0;
  context.time_unix_nano = age_ns < now ? now - age_ns : now;
  // The data point's time must not precede the start of its series.
  context.time_unix_nano = std::max(context.time_unix_nano, context.start_time_unix_nano + 1);

  // The process_* metrics stay out of the push: OpenTelemetry has process
  // metrics of its own (semantic conventions, the Collector's hostmetrics).
  const std::vector<prometheus::MetricFamily>* families = &snapshot->families;
  std::vector<prometheus::MetricFamily> without_process;
  if (std::any_of(families->begin(), families->end(), is_process_family)) {
    std::copy_if(families->begin(), families->end(), std::back_inserter(without_process),
                 [](const auto& f) { return !is_process_family(f); });
    families = &without_process;
  }
  std::string payload = options_.encoding == OtlpOptions::Encoding::json
                            ? encode_otlp_json(*families, context)
                            : encode_otlp_protobuf(*families, context);
  if (options_.compression == OtlpOptions::Compression::gzip) payload = gzip_compress(payload);
  auto shared = std::make_shared<const std::string>(std::move(payload));

  std::lock_guard lock(mutex_);
  queue_.push(std::move(shared));
  return false;
}

void OtlpPusher::note(const std::string& state, const std::string& message, bool warn) {
  if (state == state_) return;
  state_ = state;
  if (warn) {
    log::warn(message);
  } else {
    log::info(message);
  }
}

void OtlpPusher::send() {
  std::shared_ptr<const std::string> payload;
  {
    std::lock_guard lock(mutex_);
    payload = queue_.front();
  }
  if (!payload) return;
  OtlpHttpResult r = client_.post(*payload, headers_, options_.timeout);
  const auto outcome = classify_otlp_export(r);
  if (!outcome) return;  // aborted: stopping
  if (r.kind == OtlpHttpResult::Kind::tls_error && !tls_problem_.empty()) {
    r.error = "TLS setup: " + tls_problem_;
  }

  const auto now = Clock::now();
  milliseconds delay{0};
  if (otlp_export_retried(*outcome)) {
    delay = otlp_retry_delay(*outcome, backoff_.failed(), r.retry_after, options_.max_backoff);
  } else {
    backoff_.succeeded();
  }
  log_outcome(*outcome, r, payload->size());

  std::lock_guard lock(mutex_);
  ++results_[static_cast<std::size_t>(*outcome)];
  retry_at_ = now + delay;
  if (!otlp_export_retried(*outcome)) {
    // Only this thread changes the queue, so the front is the payload sent.
    queue_.pop(payload);
    if (*outcome == OtlpExportOutcome::success) {
      last_success_ = static_cast<double>(unix_now_ns()) / 1e9;
    }
  }
}

void OtlpPusher::log_outcome(OtlpExportOutcome outcome, const OtlpHttpResult& r,
                             std::size_t payload_bytes) {
  const std::string where = "OTLP push to " + options_.endpoint;
  const std::string status = std::to_string(r.status);
  switch (outcome) {
    case OtlpExportOutcome::network:
      return note("network", where + " failed: " + r.error + "; retrying with backoff", true);
    case OtlpExportOutcome::tls:
      return note("tls", where + " failed: " + r.error + "; retrying with backoff", true);
    case OtlpExportOutcome::success:
      return note(
          "ok",
          where + " succeeded (" + std::to_string(payload_bytes) + " bytes, HTTP " + status + ")",
          false);
    case OtlpExportOutcome::retryable:
      return note("retry " + status, where + ": receiver answered HTTP " + status + "; retrying",
                  true);
    case OtlpExportOutcome::permanent:
      return note("permanent " + status,
                  where + ": receiver rejected the payload with HTTP " + status +
                      " (dropped, not retried): " + excerpt(r.body),
                  true);
  }
}

void OtlpPusher::add_metrics(MetricSink& sink) const {
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < kOtlpExportOutcomes; ++i) {
    sink.counter("rdma_exporter_otlp_exports_total",
                 "OTLP export requests by result: success (2xx), retryable_error (429, 502, "
                 "503, 504; retried), permanent_error (any other status; payload dropped), "
                 "network_error (no connection or no answer within otlp.timeout; retried), "
                 "tls_error (https: the TLS handshake failed, e.g. the receiver's certificate "
                 "was refused, or the receiver sent a TLS alert; retried).",
                 {{"result", otlp_export_outcome_label(static_cast<OtlpExportOutcome>(i))}},
                 static_cast<double>(results_[i]));
  }
  sink.counter("rdma_exporter_otlp_dropped_total",
               "Payloads dropped unsent because the queue held otlp.queue_size payloads.", {},
               static_cast<double>(queue_.dropped()));
  sink.gauge("rdma_exporter_otlp_queue_length",
             "Payloads waiting to be sent, including one being retried.", {},
             static_cast<double>(queue_.size()));
  sink.gauge("rdma_exporter_otlp_last_success_timestamp_seconds",
             "Unix time of the last export the receiver accepted; 0 before the first.", {},
             last_success_);
}

OtlpEncodeContext otlp_context(const OtlpOptions& options) {
  OtlpEncodeContext context;
  // Defaults first; a user attribute with the same key replaces the default.
  auto& attrs = context.resource_attributes;
  attrs = {{"service.name", options.service_name},
           {"service.version", exporter_version()},
           {"host.name", host_name()}};
  for (const auto& [key, value] : options.resource_attributes) {
    auto it = std::find_if(attrs.begin(), attrs.end(),
                           [&key = key](const auto& a) { return a.first == key; });
    if (it != attrs.end()) {
      it->second = value;
    } else {
      attrs.emplace_back(key, value);
    }
  }
  context.scope_name = "rdma_exporter";
  context.scope_version = exporter_version();
  // The start of every cumulative series: the process start as
  // process_start_time_seconds gives it, or now when /proc cannot tell.
  auto start = process_start_time_unix_nano();
  context.start_time_unix_nano = start ? *start : unix_now_ns();
  context.time_unix_nano = unix_now_ns();
  return context;
}

}  // namespace rdma_exporter
