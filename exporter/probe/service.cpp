#include "exporter/probe/service.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cstring>
#include <future>
#include <tuple>

#include "common/file.hpp"
#include "common/host_name.hpp"
#include "common/log.hpp"
#include "exporter/probe/control/discovery.hpp"
#include "exporter/probe/control/responder.hpp"
#include "exporter/probe/local_ports/ports.hpp"
#include "exporter/probe/plan/epoch.hpp"
#include "exporter/probe/plan/pinglist.hpp"
#include "exporter/probe/plan/rails.hpp"
#include "exporter/probe/plan/targets.hpp"
#include "exporter/probe/probers/rc_prober.hpp"
#include "exporter/probe/probers/ud_prober.hpp"
#include "exporter/probe/ud/port.hpp"
#include "exporter/probe/verbs/device.hpp"
#include "exporter/probe/verbs/memory.hpp"
#include "exporter/probe/wire/auth.hpp"

namespace rdma_exporter::probe {
namespace {

constexpr const char* kLoopback = kLoopbackTarget;

// The options a running probe keeps until its next start: what its
// responder, its memory and its queue pairs were made with. One list, read
// to compare and to keep.
template <typename Options>
auto restart_only(Options& o) {
  return std::tie(o.listen_address, o.memory, o.gid_index, o.responder);
}

DeviceSettings device_settings(const ProbeOptions& o) {
  return {o.device, PortFilter{o.port, o.link_layer, o.rails}, o.memory, o.gid_index};
}

}  // namespace

ProbeService::ProbeService(ProbeOptions options)
    : options_(std::move(options)),
      ud_ports_(io_, stats_, options_.memory, options_.gid_index),
      devices_(io_, stats_, health_, device_settings(options_),
               {[this](std::vector<LocalPort>& ports, const std::vector<LocalPort>& previous) {
                  ud_ports_.attach(ports, previous);
                },
                [this] {
                  responder_->set_ports(devices_.ports());
                  apply();
                }}),
      files_(io_, reader_, stats_, health_, [this](bool changed) {
        if (changed || watched_.empty()) apply();
      }) {
  files_.configure(options_.file_sd, options_.file_sd_refresh);
}

ProbeService::~ProbeService() {
  stop();
}

Status ProbeService::start() {
  if (!options_.secret_file.empty()) {
    auto secret = read_secret_file(options_.secret_file);
    if (!secret) return secret.error();
    *keyring_ = Keyring(std::move(secret.value()));
  }
  ResponderSettings rs;
  rs.listen_address = options_.listen_address;
  rs.limits = options_.responder;
  rs.keyring = keyring_;
  rs.memory = options_.memory;
  rs.gid_index = options_.gid_index;
  responder_ = std::make_unique<Responder>(io_, rs, stats_);
  if (Status s = responder_->start(); !s) return s;
  port_ = responder_->port();
  health_.set_listening(true);
  boost::asio::post(io_, [this] {
    heartbeat();
    devices_.scan();
    files_.refresh();
  });
  loop_running_ = true;
  thread_ = std::thread([this] {
    try {
      io_.run();
    } catch (const std::exception& e) {
      log::error("probe stopped", {{"err", e.what()}});
      health_.set_loop_failed(e.what());
    }
    loop_running_ = false;
  });
  log::info("probe responder listening", {{"port", port_}});
  if (keyring_->empty() && !responder_->loopback_only()) {
    log::warn(
        "probe: the control port listens beyond loopback and no shared secret is set: any "
        "host that reaches it can hold probe sessions and have UD replies sent; set "
        "probe.secret_file (docs/security.md)",
        {{"listen_address", options_.listen_address}});
  }
  return ok_status();
}

void ProbeService::stop_all() {
  for (auto& [key, p] : probers_) p->stop();
  probers_.clear();
  for (auto& [key, w] : watched_) w.discovery->stop();
  watched_.clear();
}

void ProbeService::stop() {
  if (!thread_.joinable()) return;
  // A file still being read is left to the reader's thread.
  reader_.stop();
  boost::asio::post(io_, [this] {
    devices_.stop();
    grace_timer_.cancel();
    files_.stop();
    epoch_timer_.cancel();
    heartbeat_timer_.cancel();
    stop_all();
    if (responder_) responder_->stop();
  });
  // Handlers of the stopped sessions finish; then the loop is stopped and
  // the devices closed.
  boost::asio::post(io_, [this] { io_.stop(); });
  thread_.join();
  devices_.close();
  health_.set_listening(false);
}

std::vector<std::string> ProbeService::collect(MetricSink& sink) const {
  stats_->add_metrics(sink);
  return health_.problems();
}

void ProbeService::settle() {
  if (!loop_running_) return;
  auto done = std::make_shared<std::promise<void>>();
  auto ran = done->get_future();
  // Through the reader too: the files it was asked for have been read.
  boost::asio::post(
      io_, [this, done] { reader_.run([] { return true; }, [done](bool) { done->set_value(); }); });
  // A loop that ends meanwhile never runs the handler.
  while (ran.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
    if (!loop_running_) return;
  }
}

void ProbeService::reload_secret(std::string path, std::chrono::milliseconds grace) {
  if (!thread_.joinable()) return;
  boost::asio::post(io_, [this, path = std::move(path), grace] { rotate_secret(path, grace); });
}

void ProbeService::rotate_secret(const std::string& path, std::chrono::milliseconds grace) {
  if (path.empty()) {
    rotate_to(path, grace, "");
    return;
  }
  reader_.run([path] { return read_secret_file(path); },
              [this, path, grace](Result<std::string> read) {
                if (!read) {
                  log::error("reload: probe secret kept", {{"err", read.error().message}});
                  return;
                }
                rotate_to(path, grace, std::move(read.value()));
              });
}

void ProbeService::rotate_to(const std::string& path, std::chrono::milliseconds grace,
                             std::string secret) {
  const bool had = !keyring_->empty();
  if (!keyring_->rotate(std::move(secret), std::chrono::steady_clock::now() + grace)) return;
  options_.secret_file = path;
  options_.secret_grace = grace;
  if (keyring_->empty()) {
    log::warn("reload: probe.secret_file removed: probe peers are no longer authenticated");
  } else if (had) {
    log::info("probe: secret rotated; the previous one is accepted for the grace period",
              {{"grace_seconds", std::to_string(grace.count() / 1000)}});
  } else {
    log::info("probe: peers are authenticated from now on");
  }
  retire_secrets();
  grace_timer_.expires_after(grace);
  grace_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) retire_secrets();
  });
}

// Both ends of this host's sessions: those the keyring in force would not
// set up close now (docs/security.md, the secret's life cycle).
void ProbeService::retire_secrets() {
  if (responder_) responder_->retire_secrets();
  for (auto& [key, p] : probers_) p->recheck_secret();
}

void ProbeService::update(ProbeOptions options) {
  if (!thread_.joinable()) return;
  boost::asio::post(io_, [this, options = std::move(options)]() mutable {
    // What the responder and the probe memory were made with.
    if (restart_only(options) != restart_only(options_)) {
      log::warn(
          "reload: probe listen address, memory, GID index and responder limits change "
          "at the next start");
    }
    rotate_secret(options.secret_file, options.secret_grace);
    // Everything else takes effect now; the secret's file and grace once
    // rotate_secret has read it.
    restart_only(options) = restart_only(options_);
    options.enabled = options_.enabled;
    options.secret_file = options_.secret_file;
    options.secret_grace = options_.secret_grace;
    options_ = std::move(options);
    files_.configure(options_.file_sd, options_.file_sd_refresh);
    // Settings a running prober or discovery was made with: start anew. What
    // each target last said of its ports is kept for its next discovery, so
    // the pairs planned again keep their series, and their counters, through
    // the reload instead of starting from zero once the target answers.
    carried_ports_.clear();
    for (auto& [key, w] : watched_) carried_ports_[key] = std::move(w.ports);
    stop_all();
    devices_.configure(device_settings(options_));
    files_.stop();
    files_.refresh();
  });
}

void ProbeService::apply() {
  // Every target wanted now, as a host.
  WantedTargets wanted = wanted_targets(options_.targets, files_.targets());
  for (const auto& address : wanted.conflicting) {
    if (conflicting_targets_.contains(address)) continue;
    log::warn(
        "probe: a target is listed more than once with other labels, classes or rail; "
        "the first entry is used",
        {{"target", address}});
  }
  conflicting_targets_ = wanted.conflicting;

  // This epoch's pinglist: every host of this host's group, and a few of
  // other groups per local rail (docs/probe.md, "Pinglists").
  std::vector<std::string> rails;
  for (const auto& p : devices_.ports()) rails.push_back(p.rail);
  const EpochPick pick = pick_epoch(
      wanted, ThisHost{interface_addresses(), host_name(), port_}, std::move(rails),
      options_.pinglist, pinglist_epoch(std::chrono::system_clock::now(), options_.pinglist.epoch));
  stats_->set_pinglist(pick.report);
  std::erase_if(wanted.targets,
                [&](const auto& kv) { return !pick.chosen.contains(kv.second.target.address); });
  if (options_.loopback) {
    Target self;
    self.address = "127.0.0.1:" + std::to_string(port_);
    wanted.add(kLoopback, kLoopback, self);
  }
  stats_->set_targets(wanted.by_source);
  schedule_epoch();
  watch(wanted, pick);
  run_probers(pick.report.group);
}

void ProbeService::watch(const WantedTargets& wanted, const EpochPick& pick) {
  DiscoverySettings ds;
  ds.connect_timeout = options_.connect_timeout;
  ds.interval = options_.discovery_interval;
  ds.backoff_initial = options_.backoff_initial;
  ds.backoff_max = options_.backoff_max;
  std::vector<std::shared_ptr<TargetStats>> keep_targets;
  std::erase_if(watched_, [&](auto& kv) {
    if (wanted.targets.contains(kv.first)) return false;
    kv.second.discovery->stop();
    return true;
  });
  for (const auto& [key, nt] : wanted.targets) {
    auto [it, fresh] = watched_.try_emplace(key);
    Watched& w = it->second;
    if (fresh) {
      w.address = nt.target.address;
      w.name = nt.name;
      w.target = nt.target;
      w.stats = stats_->target(key.labels);
      if (auto carried = carried_ports_.find(key); carried != carried_ports_.end()) {
        w.ports = std::move(carried->second);
      }
      w.discovery = std::make_shared<Discovery>(io_, w.address, ds, discovery_handlers(key));
      w.discovery->start();
    }
    const auto c = pick.chosen.find(w.address);
    w.rails = c == pick.chosen.end() ? std::set<std::string>{} : c->second;
    keep_targets.push_back(w.stats);
  }
  stats_->retain_targets(keep_targets);
  carried_ports_.clear();
}

Discovery::Handlers ProbeService::discovery_handlers(const WatchKey& key) {
  Discovery::Handlers handlers;
  handlers.ports = [this, key](std::vector<wire::PortAd> ports) {
    auto found = watched_.find(key);
    if (found == watched_.end()) return;
    Watched& target = found->second;
    target.stats->answered(ports.size());
    if (target.failing) log::info("probe: target answering again", {{"target", target.name}});
    target.failing = false;
    if (ports != target.ports) {
      target.ports = std::move(ports);
      apply();
    }
  };
  handlers.failed = [this, key](const char* why, const std::string& detail) {
    auto found = watched_.find(key);
    if (found == watched_.end()) return;
    Watched& target = found->second;
    target.stats->failed(why);
    if (!target.failing) {
      log::warn("probe: asking the target for its ports failed; its known ports stay probed",
                {{"target", target.name}, {"reason", why}, {"err", detail}});
    }
    target.failing = true;
  };
  return handlers;
}

void ProbeService::run_probers(const std::string& self_group) {
  ProberSettings ps;
  ps.connect_timeout = options_.connect_timeout;
  ps.backoff_initial = options_.backoff_initial;
  ps.backoff_max = options_.backoff_max;
  ps.keyring = keyring_;
  ps.memory = options_.memory;
  ps.gid_index = options_.gid_index;
  ps.device_suspect = [this] { devices_.scan_soon(); };
  ps.stalls = stats_->stalls();

  const std::vector<ProbeClass> classes = effective_classes(options_);
  const std::vector<LocalPort>& ports = devices_.ports();
  std::vector<PlanPort> plan_ports;
  plan_ports.reserve(ports.size());
  for (const auto& p : ports) {
    plan_ports.push_back({{p.device->name(), p.info.port, p.rail},
                          p.info.gid,
                          reinterpret_cast<std::uintptr_t>(p.ud.get())});
  }
  std::vector<PlanTarget> plan_targets;
  for (const auto& [key, w] : watched_) {
    plan_targets.push_back({w.address, w.name, w.target, w.ports, w.rails});
  }
  const PlanInputs inputs{
      plan_ports, plan_targets, classes, options_.cross_rail, options_.pinglist.group_label,
      self_group};
  const auto planned = plan_probers(inputs);
  const std::set<Gid> group_gids = group_port_gids(inputs);
  for (const LocalPort& p : ports) {
    if (p.ud) p.ud->set_group_peers(group_gids);
  }
  std::map<ProberKey, std::shared_ptr<ControlClient>> next;
  std::vector<std::shared_ptr<SeriesStats>> keep;
  std::vector<std::shared_ptr<HistogramStats>> keep_histograms;
  std::vector<std::shared_ptr<ScopeStats>> keep_scopes;
  for (const PlannedProber& plan : planned) {
    const LocalPort& local = ports[plan.local];
    const PlanTarget& target = plan_targets[plan.target];
    const wire::PortAd& remote = target.ports[plan.remote];
    const ProbeClass& cls = classes[plan.cls];
    std::shared_ptr<SeriesStats> series;
    UdProberStats ud_stats;
    if (is_ud(cls.op)) {
      series = stats_->series(plan.key.labels, SeriesShape{options_.histograms == "target", false,
                                                           options_.pair_series == "all"});
      ud_stats = ud_prober_histograms(*stats_, local, cls, plan.scope, keep_histograms);
      ud_stats.pair = series;
      auto scope = ud_scope_stats(*stats_, local, cls, plan.scope);
      series->set_scope(scope);
      keep_scopes.push_back(std::move(scope));
    } else {
      series = stats_->series(plan.key.labels);
    }
    keep.push_back(series);
    if (auto it = probers_.find(plan.key); it != probers_.end()) {
      next[plan.key] = it->second;
      probers_.erase(it);
      continue;
    }
    std::shared_ptr<ControlClient> p;
    if (is_ud(cls.op)) {
      p = std::make_shared<UdProber>(io_, local.name(), local.ud, target.address, remote, cls, ps,
                                     ud_stats);
    } else {
      p = std::make_shared<Prober>(io_, local.name(), device_queue_pairs(local, ps.memory),
                                   target.address, remote, cls, ps, series);
    }
    p->start();
    next[plan.key] = std::move(p);
  }
  for (auto& [key, p] : probers_) p->stop();
  probers_ = std::move(next);
  stats_->retain(keep);
  stats_->retain_histograms(keep_histograms);
  stats_->retain_scopes(keep_scopes);
}

void ProbeService::heartbeat() {
  const auto now = std::chrono::steady_clock::now();
  const std::shared_ptr<StallWatch>& stalls = stats_->stalls();
  stalls->check(now);
  stalls->armed(now, now + kHeartbeat);
  heartbeat_timer_.expires_at(now + kHeartbeat);
  heartbeat_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) heartbeat();
  });
}

void ProbeService::schedule_epoch() {
  const auto length = options_.pinglist.epoch;
  const auto now = std::chrono::system_clock::now();
  const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch());
  const auto wait = length - since % length;
  epoch_timer_.expires_after(wait);
  epoch_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) apply();
  });
}

}  // namespace rdma_exporter::probe
