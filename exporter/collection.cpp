#include "exporter/collection.hpp"

#include <algorithm>

#include "common/kubernetes/pod_directory.hpp"
#include "common/log.hpp"
#include "exporter/build_info.hpp"
#include "exporter/formats/gzip.hpp"
#include "exporter/formats/text.hpp"

namespace rdma_exporter {

Collection::Collection(const Config& config)
    : Collection(config, KernelInterfaces::real(config.collection.netlink_timeout)) {}

Collection::Collection(const Config& config, std::unique_ptr<netlink::Transport> transport)
    : Collection(config, [&] {
        KernelInterfaces k = KernelInterfaces::real(config.collection.netlink_timeout);
        k.rdma = std::move(transport);
        return k;
      }()) {}

Collection::Collection(const Config& config, KernelInterfaces kernel)
    : config_(config), kernel_(std::move(kernel)), client_(*kernel_.rdma) {
  build_collectors();
}

Collection::~Collection() = default;

void Collection::add_collector(std::unique_ptr<Collector> collector) {
  running_.push_back({nullptr, std::move(collector)});
}

void Collection::reconfigure(const Config& config) {
  config_ = config;
  build_collectors();
}

void Collection::retire(Running& running) {
  KernelStateManager* m = running.collector->manager();
  if (m == nullptr || !m->active()) return;
  Scrape scrape = this->scrape();
  try {
    m->restore(scrape);
  } catch (const std::exception& e) {
    log::error("restore failed", {{"collector", running.collector->name()}, {"err", e.what()}});
  }
}

Scrape Collection::scrape() {
  Scrape s(client_, filter_);
  s.set_pods(pods_.get());
  return s;
}

void Collection::configure_pods() {
  const kubernetes::Options& k = config_.kubernetes;
  if (!k.enabled) {
    pods_.reset();
    return;
  }
  if (pods_ && pods_options_ == k) return;
  kubernetes::DirectoryOptions d{k.cri_socket, k.pod_resources_socket, k.refresh_interval,
                                 k.timeout};
  if (d.cri_socket.empty()) {
    d.cri_socket = kubernetes::find_cri_socket(kubernetes::kCriSockets);
    if (d.cri_socket.empty()) {
      log::warn("kubernetes: no container runtime socket found; processes get no pod names",
                {{"tried",
                  "/run/containerd/containerd.sock, /run/crio/crio.sock, "
                  "/run/cri-dockerd.sock"}});
    }
  }
  pods_.reset();  // the previous directory's thread ends first
  pods_ = std::make_unique<kubernetes::PodDirectory>(d);
  pods_->refresh();  // the first collection has the names
  if (!config_.collection.once) pods_->start();
  pods_options_ = k;
}

void Collection::build_collectors() {
  configure_pods();
  // The configuration was validated before it got here.
  auto filter = DeviceFilter::make(config_.devices.include, config_.devices.exclude);
  if (filter) filter_ = std::move(filter).value();
  std::vector<Running> next;
  for (const CollectorEntry& entry : collector_registry()) {
    auto it = std::find_if(running_.begin(), running_.end(),
                           [&](const Running& r) { return r.entry == &entry; });
    std::unique_ptr<Collector> previous;
    if (it != running_.end()) previous = std::move(it->collector);
    if (!config_.collectors.enabled(entry.name) ||
        (entry.needs_kubernetes && !config_.kubernetes.enabled)) {
      if (previous) {
        Running gone{&entry, std::move(previous)};
        retire(gone);
      }
      continue;
    }
    const std::any& options = config_.collectors.options_of(entry.name);
    if (previous && previous->reconfigure(options)) {
      next.push_back({&entry, std::move(previous)});
      continue;
    }
    next.push_back({&entry, entry.make(CollectorContext{kernel_, config_.sysfs.root, options,
                                                        config_.collection.once})});
  }
  // The daemon's own collectors stay, after the registry's.
  for (auto& r : running_) {
    if (r.entry == nullptr) next.push_back(std::move(r));
  }
  running_ = std::move(next);
}

std::vector<KernelStateManager*> Collection::managers() const {
  std::vector<KernelStateManager*> out;
  for (const auto& r : running_) {
    if (KernelStateManager* m = r.collector->manager(); m != nullptr && m->active()) {
      out.push_back(m);
    }
  }
  return out;
}

bool Collection::manages_kernel_state() const {
  return !managers().empty();
}

Duration Collection::maintenance_interval() const {
  Duration interval = Duration::zero();
  for (const KernelStateManager* m : managers()) {
    if (interval == Duration::zero() || m->interval() < interval) interval = m->interval();
  }
  return interval;
}

void Collection::maintain() {
  // One scrape: the device list is read once for every manager.
  Scrape scrape = this->scrape();
  for (const auto& r : running_) {
    KernelStateManager* m = r.collector->manager();
    if (m == nullptr || !m->active()) continue;
    try {
      m->reconcile(scrape);
    } catch (const std::exception& e) {
      log::error("reconcile failed", {{"collector", r.collector->name()}, {"err", e.what()}});
    }
  }
}

void Collection::restore_kernel_state() {
  for (auto& r : running_) retire(r);
}

bool Collection::uses_netlink() const {
  return std::any_of(running_.begin(), running_.end(), [](const Running& r) {
    return r.entry != nullptr && r.entry->reads_rdma_netlink;
  });
}

void Collection::log_changes(const CollectorOutcome& o) {
  auto& last = last_errors_[o.name];
  if (last == o.errors) return;
  if (o.errors.empty()) {
    log::info("collector recovered", {{"collector", o.name}});
  } else {
    log::warn("collector failed",
              {{"collector", o.name}, {"err", o.errors.front()}, {"errors", o.errors.size()}});
  }
  last = o.errors;
}

void Collection::run_collectors(Scrape& scrape, MetricSink& sink, Snapshot& snap) {
  using clock = std::chrono::steady_clock;
  // Samples are tagged with their collector (Snapshot::tags): i + 1 for the
  // i-th, 0 for the exporter's own.
  for (const auto& r : running_) {
    sink.set_tag(static_cast<uint16_t>(snap.outcomes.size() + 1));
    Collector* collector = r.collector.get();
    CollectorOutcome outcome;
    outcome.name = std::string(collector->name());
    const auto t0 = clock::now();
    try {
      outcome.errors = collector->collect(scrape, sink);
    } catch (const std::exception& e) {
      outcome.errors.push_back(std::string("internal error: ") + e.what());
    }
    outcome.duration_seconds = std::chrono::duration<double>(clock::now() - t0).count();
    if (!outcome.errors.empty()) ++failures_[outcome.name];
    log_changes(outcome);
    snap.outcomes.push_back(std::move(outcome));
  }
  sink.set_tag(0);
}

void Collection::add_netlink_metrics(Scrape& scrape, MetricSink& sink) {
  if (!uses_netlink()) return;
  const int present = scrape.netlink_absent() ? 0 : 1;
  // The first state is reported at start-up; changes are logged here.
  if (last_netlink_present_ != -1 && present != last_netlink_present_) {
    if (present == 0) {
      log::warn("rdma netlink went away", {{"err", scrape.topology().error().message}});
    } else {
      log::info("rdma netlink is available");
    }
  }
  last_netlink_present_ = present;
  sink.gauge("rdma_exporter_netlink_available",
             "1 when the kernel answers on rdma netlink (NETLINK_RDMA), 0 when it has no RDMA "
             "support loaded.",
             {}, present);
}

void Collection::add_kubernetes_metrics(MetricSink& sink) const {
  if (!pods_) return;
  const auto api = [&](const char* name, const std::string& socket,
                       const kubernetes::ApiHealth& h) {
    if (socket.empty()) return;
    sink.gauge("rdma_exporter_kubernetes_api_up",
               "1 when the node's Kubernetes API (cri: the container runtime's, pod_resources: "
               "the kubelet's) answered the last call.",
               {{"api", name}}, h.up ? 1 : 0);
    sink.counter("rdma_exporter_kubernetes_api_calls_total", "Calls to the node's Kubernetes API.",
                 {{"api", name}}, static_cast<double>(h.calls));
    sink.counter("rdma_exporter_kubernetes_api_failures_total",
                 "Calls to the node's Kubernetes API that failed (no socket, refused, no answer "
                 "within kubernetes.timeout, an error).",
                 {{"api", name}}, static_cast<double>(h.failures));
  };
  api("cri", pods_->options().cri_socket, pods_->cri_health());
  api("pod_resources", pods_->options().pod_resources_socket, pods_->pod_resources_health());
}

void Collection::add_collector_health(const Snapshot& snap, MetricSink& sink) {
  // Each collector's own health goes with its metrics (a scrape that
  // selects collectors gets theirs only).
  auto for_each_outcome = [&](const auto& fn) {
    for (std::size_t i = 0; i < snap.outcomes.size(); ++i) {
      sink.set_tag(static_cast<uint16_t>(i + 1));
      fn(snap.outcomes[i]);
    }
    sink.set_tag(0);
  };
  for_each_outcome([&](const CollectorOutcome& o) {
    sink.gauge("rdma_exporter_collector_success",
               "1 when the collector's last run succeeded, 0 when it met errors.",
               {{"collector", o.name}}, o.errors.empty() ? 1 : 0);
  });
  for_each_outcome([&](const CollectorOutcome& o) {
    sink.gauge("rdma_exporter_collector_duration_seconds",
               "Wall time of the collector's last run, in seconds.", {{"collector", o.name}},
               o.duration_seconds);
  });
  for_each_outcome([&](const CollectorOutcome& o) {
    sink.counter("rdma_exporter_collector_failures_total",
                 "Collections in which the collector met errors, since the exporter started.",
                 {{"collector", o.name}}, static_cast<double>(failures_[o.name]));
  });
}

std::shared_ptr<const Snapshot> Collection::collect() {
  using clock = std::chrono::steady_clock;
  auto snap = std::make_shared<Snapshot>();
  const auto start = clock::now();
  MetricSink sink;
  Scrape scrape = this->scrape();
  ++collections_;

  run_collectors(scrape, sink, *snap);
  add_netlink_metrics(scrape, sink);
  add_kubernetes_metrics(sink);
  add_collector_health(*snap, sink);
  sink.counter("rdma_exporter_collections_total",
               "Collections run since the exporter started (cached results served again are "
               "not counted).",
               {}, static_cast<double>(collections_));
  sink.info("rdma_exporter_build_info", "Version and source revision of the exporter.",
            {{"version", exporter_version()}, {"revision", exporter_revision()}});
  for (const auto& source : sources_) source(sink);
  sink.gauge("rdma_exporter_collection_duration_seconds",
             "Wall time of the whole last collection, in seconds.", {},
             std::chrono::duration<double>(clock::now() - start).count());

  snap->tags = sink.take_tags();
  snap->families = sink.take();
  snap->taken = clock::now();
  try {
    snap->text = render_text(snap->families);
    snap->gzip = gzip_compress(snap->text, kExpositionGzipLevel);
  } catch (const std::exception& e) {
    log::error("rendering the exposition failed", {{"err", e.what()}});
  }
  return snap;
}

}  // namespace rdma_exporter
