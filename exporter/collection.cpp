#include "exporter/collection.hpp"

#include <linux/netlink.h>

#include "collectors/dcb/dcb_collector.hpp"
#include "collectors/devices/devices_collector.hpp"
#include "collectors/ethtool/ethtool_collector.hpp"
#include "collectors/hw_counters/hw_counters_collector.hpp"
#include "collectors/kernel/netlink/socket_transport.hpp"
#include "collectors/qp_counters/qp_counters_collector.hpp"
#include "collectors/resources/resources_collector.hpp"
#include "collectors/sysfs/sysfs_collector.hpp"
#include "common/log.hpp"
#include "exporter/build_info.hpp"
#include "exporter/formats/gzip.hpp"
#include "exporter/formats/text.hpp"

namespace rdma_exporter {

KernelInterfaces KernelInterfaces::real(const Config& config) {
  KernelInterfaces k;
  k.rdma = std::make_unique<netlink::SocketTransport>(config.collection.netlink_timeout);
  k.route = std::make_unique<netlink::SocketTransport>(config.collection.netlink_timeout,
                                                       NETLINK_ROUTE, "NETLINK_ROUTE");
  k.ethtool = std::make_unique<ethtool::SocketIoctl>();
  return k;
}

Collection::Collection(const Config& config) : Collection(config, KernelInterfaces::real(config)) {}

Collection::Collection(const Config& config, std::unique_ptr<netlink::Transport> transport)
    : Collection(config, [&] {
        KernelInterfaces k = KernelInterfaces::real(config);
        k.rdma = std::move(transport);
        return k;
      }()) {}

Collection::Collection(const Config& config, KernelInterfaces kernel)
    : config_(config), kernel_(std::move(kernel)), client_(*kernel_.rdma) {
  build_collectors();
}

void Collection::reconfigure(const Config& config) {
  config_ = config;
  build_collectors();
}

void Collection::build_collectors() {
  // The configuration was validated before it got here.
  auto filter = DeviceFilter::make(config_.devices.include, config_.devices.exclude);
  if (filter) filter_ = std::move(filter).value();
  const auto& c = config_.collectors;
  collectors_.clear();
  order_.clear();
  auto add = [&](std::unique_ptr<Collector> collector) {
    order_.push_back(collector.get());
    collectors_.push_back(std::move(collector));
  };
  if (c.devices) add(std::make_unique<DevicesCollector>());
  if (c.hw_counters) add(std::make_unique<HwCountersCollector>());
  if (c.optional_counters) {
    // Like the qp counter manager, kept across reloads for its write counts.
    if (optional_manager_) {
      optional_manager_->reconfigure(config_.optional_counters);
    } else {
      optional_manager_ = std::make_unique<OptionalCounterManager>(config_.optional_counters);
    }
    add(std::make_unique<OptionalCountersCollector>(optional_manager_.get()));
  } else {
    optional_manager_.reset();
  }
  if (c.resources) add(std::make_unique<ResourcesCollector>());
  if (c.qp_counters) {
    // The manager outlives reloads that stop it managing, so that it can undo
    // its bindings.
    if (manager_) {
      manager_->reconfigure(config_.qp_counters);
    } else {
      auto m = std::make_unique<CounterModeManager>(config_.qp_counters);
      if (m->active()) manager_ = std::move(m);
    }
    if (qp_counters_) {
      qp_counters_->reconfigure(config_.qp_counters, manager_.get());
    } else {
      qp_counters_ = std::make_unique<QpCountersCollector>(config_.qp_counters, manager_.get());
    }
    order_.push_back(qp_counters_.get());
  } else {
    qp_counters_.reset();
  }
  if (c.ethtool) add(std::make_unique<EthtoolCollector>(*kernel_.ethtool, config_.ethtool));
  if (c.dcb) add(std::make_unique<DcbCollector>(*kernel_.route, config_.dcb));
  if (c.sysfs) add(std::make_unique<SysfsCollector>(config_.sysfs.root));
}

bool Collection::manages_kernel_state() const {
  return manager_ != nullptr || (optional_manager_ && optional_manager_->active());
}

Duration Collection::maintenance_interval() const {
  Duration interval = Duration::zero();
  auto take = [&](Duration d) {
    if (interval == Duration::zero() || d < interval) interval = d;
  };
  if (manager_) take(config_.qp_counters.reconcile_interval);
  if (optional_manager_ && optional_manager_->active()) take(optional_manager_->interval());
  return interval;
}

void Collection::maintain() {
  if (!manages_kernel_state()) return;
  Scrape scrape(client_, filter_);
  if (manager_) {
    try {
      manager_->reconcile(scrape);
    } catch (const std::exception& e) {
      log::error(std::string("qp counters: reconcile failed: ") + e.what());
    }
  }
  if (optional_manager_) {
    try {
      optional_manager_->reconcile(scrape);
    } catch (const std::exception& e) {
      log::error(std::string("optional counters: reconcile failed: ") + e.what());
    }
  }
}

void Collection::restore_kernel_state() {
  if (!manager_) return;
  Scrape scrape(client_, filter_);
  try {
    manager_->restore(scrape);
  } catch (const std::exception& e) {
    log::error(std::string("qp counters: restore failed: ") + e.what());
  }
}

std::vector<std::string> Collection::collector_names() const {
  std::vector<std::string> names;
  for (Collector* c : order_) names.emplace_back(c->name());
  return names;
}

void Collection::log_changes(const CollectorOutcome& o) {
  auto& last = last_errors_[o.name];
  if (last == o.errors) return;
  if (o.errors.empty()) {
    log::info("collector " + o.name + " recovered");
  } else {
    std::string msg = "collector " + o.name + " failed: " + o.errors.front();
    if (o.errors.size() > 1) msg += " (and " + std::to_string(o.errors.size() - 1) + " more)";
    log::warn(msg);
  }
  last = o.errors;
}

std::shared_ptr<const Snapshot> Collection::collect() {
  using clock = std::chrono::steady_clock;
  auto snap = std::make_shared<Snapshot>();
  const auto start = clock::now();
  MetricSink sink;
  Scrape scrape(client_, filter_);
  ++collections_;

  for (Collector* collector : order_) {
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
    snap->outcomes.push_back(std::move(outcome));
  }

  const auto& c = config_.collectors;
  const bool uses_netlink = c.devices || c.hw_counters || c.resources || c.qp_counters ||
                            c.optional_counters || c.ethtool || c.dcb;
  if (uses_netlink) {
    const int present = scrape.netlink_absent() ? 0 : 1;
    // The first state is reported at start-up; changes are logged here.
    if (last_netlink_present_ != -1 && present != last_netlink_present_) {
      if (present == 0) {
        log::warn("rdma netlink went away (" + scrape.topology().error().message + ")");
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

  for (const auto& o : snap->outcomes) {
    sink.gauge("rdma_exporter_collector_success",
               "1 when the collector's last run succeeded, 0 when it met errors.",
               {{"collector", o.name}}, o.errors.empty() ? 1 : 0);
  }
  for (const auto& o : snap->outcomes) {
    sink.gauge("rdma_exporter_collector_duration_seconds",
               "Wall time of the collector's last run, in seconds.", {{"collector", o.name}},
               o.duration_seconds);
  }
  for (const auto& o : snap->outcomes) {
    sink.counter("rdma_exporter_collector_failures_total",
                 "Collections in which the collector met errors, since the exporter started.",
                 {{"collector", o.name}}, static_cast<double>(failures_[o.name]));
  }
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

  snap->families = sink.take();
  snap->taken = clock::now();
  try {
    snap->text = render_text(snap->families);
    snap->gzip = gzip_compress(snap->text);
  } catch (const std::exception& e) {
    log::error(std::string("rendering the exposition failed: ") + e.what());
  }
  return snap;
}

}  // namespace rdma_exporter
