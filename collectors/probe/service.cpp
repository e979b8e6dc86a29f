#include "collectors/probe/service.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cstring>
#include <future>
#include <tuple>

#include "collectors/probe/control/discovery.hpp"
#include "collectors/probe/control/responder.hpp"
#include "collectors/probe/devices/ports.hpp"
#include "collectors/probe/plan/epoch.hpp"
#include "collectors/probe/plan/pinglist.hpp"
#include "collectors/probe/plan/rails.hpp"
#include "collectors/probe/plan/targets.hpp"
#include "collectors/probe/probers/rc_prober.hpp"
#include "collectors/probe/probers/ud_prober.hpp"
#include "collectors/probe/ud/port.hpp"
#include "collectors/probe/verbs/device.hpp"
#include "collectors/probe/verbs/memory.hpp"
#include "collectors/probe/wire/auth.hpp"
#include "common/file.hpp"
#include "common/host_name.hpp"
#include "common/log.hpp"

namespace rdma_exporter::probe {
namespace {

// How often the device list and the ports are looked at.
constexpr std::chrono::seconds kScanInterval{2};
// Ports are looked at on every port event and at least every 15 scans (30 s).
constexpr unsigned kPortRefreshScans = 15;
constexpr const char* kLoopback = kLoopbackTarget;
// A target file larger than this is refused rather than read into memory.
constexpr std::size_t kMaxFileSdBytes = 16u << 20;

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_ino == b.st_ino && a.st_dev == b.st_dev && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
}

bool same_ports(const std::vector<LocalPort>& a, const std::vector<LocalPort>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
    return x.device == y.device && x.info.port == y.info.port && x.info.gid == y.info.gid &&
           x.rail == y.rail && x.ud == y.ud;
  });
}

// UD datagrams per port: room for this many in flight each way.
constexpr uint32_t kUdQueueDepth = 256;

constexpr const char* kGroupLatencyHelp =
    "Network round trip of UD probes per local port, class and scope (group: targets in this "
    "host's own group of probe.pinglist.group_label, remote: the others): the probe's round "
    "trip less the responder's delay, timed with device completion timestamps "
    "(clock=\"device\") or the host clock (clock=\"host\").";
constexpr const char* kProberDelayHelp =
    "Time a UD probe spent in this host's software and PCIe path: host round trip less device "
    "round trip (only with device completion timestamps).";
constexpr const char* kResponderDelayHelp =
    "Responders' delay between receiving a UD probe and answering it, as their replies report "
    "it.";

}  // namespace

ProbeService::ProbeService(ProbeOptions options) : options_(std::move(options)) {
  device_pattern_ = options_.device.empty() ? Pattern() : Pattern::checked(options_.device);
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
    scan();
    refresh_files();
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
  boost::asio::post(io_, [this] {
    scan_timer_.cancel();
    grace_timer_.cancel();
    files_timer_.cancel();
    epoch_timer_.cancel();
    stop_all();
    if (responder_) responder_->stop();
    for (auto& [name, held] : devices_) {
      held.events.reset();
    }
  });
  // Handlers of the stopped sessions finish; then the loop is stopped and
  // the devices closed.
  boost::asio::post(io_, [this] { io_.stop(); });
  thread_.join();
  ports_.clear();
  devices_.clear();
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
  boost::asio::post(io_, [done] { done->set_value(); });
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
  std::string secret;
  if (!path.empty()) {
    auto read = read_secret_file(path);
    if (!read) {
      log::error("reload: probe secret kept", {{"err", read.error().message}});
      return;
    }
    secret = std::move(read.value());
  }
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
  if (responder_) responder_->retire_secrets();
  grace_timer_.expires_after(grace);
  grace_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && responder_) responder_->retire_secrets();
  });
}

void ProbeService::update(ProbeOptions options) {
  if (!thread_.joinable()) return;
  boost::asio::post(io_, [this, options = std::move(options)]() mutable {
    // What the responder and the probe memory were made with.
    auto restart_only = [](const ProbeOptions& o) {
      return std::tie(o.listen_address, o.memory, o.gid_index, o.responder);
    };
    if (restart_only(options) != restart_only(options_)) {
      log::warn(
          "reload: probe listen address, memory, GID index and responder limits change "
          "at the next start");
    }
    rotate_secret(options.secret_file, options.secret_grace);
    options_.classes = std::move(options.classes);
    options_.targets = std::move(options.targets);
    options_.loopback = options.loopback;
    options_.connect_timeout = options.connect_timeout;
    options_.backoff_initial = options.backoff_initial;
    options_.backoff_max = options.backoff_max;
    options_.discovery_interval = options.discovery_interval;
    options_.cross_rail = options.cross_rail;
    options_.device = std::move(options.device);
    options_.port = options.port;
    options_.link_layer = std::move(options.link_layer);
    options_.rails = std::move(options.rails);
    options_.pinglist = std::move(options.pinglist);
    options_.histograms = std::move(options.histograms);
    device_pattern_ = options_.device.empty() ? Pattern() : Pattern::checked(options_.device);
    if (options.file_sd != options_.file_sd) {
      options_.file_sd = std::move(options.file_sd);
      files_.clear();
      health_.forget_file_sd();
    }
    options_.file_sd_refresh = options.file_sd_refresh;
    // A reload forgets the devices that left and did not come back.
    std::erase_if(states_, [](const auto& kv) { return kv.second == device_state::gone; });
    // Settings a running prober or discovery was made with: start anew.
    stop_all();
    ports_dirty_ = true;
    scan();
    files_timer_.cancel();
    refresh_files();
  });
}

void ProbeService::scan_soon() {
  ports_dirty_ = true;
  if (scan_queued_) return;
  scan_queued_ = true;
  boost::asio::post(io_, [this] {
    scan_queued_ = false;
    scan();
  });
}

void ProbeService::scan() {
  scan_timer_.expires_after(kScanInterval);
  scan_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) scan();
  });
  // Nothing changed since the last look (the same uverbs devices, no port
  // event, no device waiting to be opened): the device list and the ports
  // are looked at again only every kPortRefreshScans scans, for a change
  // that raised no event.
  auto entries = Device::uverbs_entries();
  if (entries == last_entries_ && !ports_dirty_ && failed_.empty() &&
      ++quiet_scans_ < kPortRefreshScans) {
    return;
  }
  quiet_scans_ = 0;
  ports_dirty_ = false;
  last_entries_ = std::move(entries);
  auto list = Device::list();
  if (!list) {
    health_.set_device_problem(list.error().message);
    ports_dirty_ = true;  // the next scan lists again, whatever sysfs says
    return;
  }
  track_devices(list.value());
  use_ports();
}

void ProbeService::track_devices(const std::vector<DeviceId>& list) {
  std::set<std::string> present;
  for (const DeviceId& id : list) {
    present.insert(id.name);
    if (!device_pattern_.matches(id.name)) {
      if (devices_.contains(id.name)) release(id.name, "excluded");
      states_[id.name] = device_state::excluded;
      continue;
    }
    auto it = devices_.find(id.name);
    if (it != devices_.end() && it->second.device->guid() != id.guid) {
      release(id.name, "replaced");
      it = devices_.end();
    }
    if (it == devices_.end()) {
      auto device = Device::open(id.name);
      if (!device) {
        if (failed_[id.name] != device.error().message) {
          log::warn("probe: cannot open the device; trying again",
                    {{"device", id.name},
                     {"err", device.error().message},
                     {"interval", std::to_string(kScanInterval.count()) + "s"}});
        }
        failed_[id.name] = device.error().message;
        states_[id.name] = device_state::failed;
        continue;
      }
      failed_.erase(id.name);
      Held held;
      held.device = std::move(device.value());
      const Device& d = *held.device;
      // Memory is made per session; trying one buffer now turns a device
      // or kernel that cannot register this kind into one clear line.
      if (auto trial = Memory::create(*held.device, 64, options_.memory); !trial) {
        const std::string problem = "probe.memory " + options_.memory + " cannot be used on " +
                                    d.name() + ": " + trial.error().message;
        log::error(
            "probe: memory cannot be used; every probe session will fail with reason "
            "\"setup\"",
            {{"device", d.name()}, {"err", problem}});
        health_.set_memory_problem(problem);
      }
      const bool back = states_[id.name] == device_state::gone;
      log::info(
          back ? "probe: using the device again" : "probe: using the device",
          {{"device", d.name()},
           {"pd", d.thread_domain() ? "thread domain" : "plain PD"},
           {"timestamps", d.completion_timestamps() ? "completion timestamps" : "host clock"}});
      it = devices_.emplace(id.name, std::move(held)).first;
      watch_events(id.name);
    }
    states_[id.name] = device_state::in_use;
  }
  for (auto it = devices_.begin(); it != devices_.end();) {
    const std::string name = (it++)->first;
    if (!present.contains(name)) release(name, "removed");
  }
  for (auto it = states_.begin(); it != states_.end();) {
    // A device that left while not in use is forgotten.
    if (!present.contains(it->first) && it->second != device_state::gone) {
      failed_.erase(it->first);
      it = states_.erase(it);
    } else {
      ++it;
    }
  }
}

void ProbeService::use_ports() {
  // The ports: every port of an open device that passes the filters and
  // was once seen active with a GID.
  const PortFilter filter{options_.port, options_.link_layer, options_.rails};
  std::vector<DeviceView> views;
  for (auto& [name, held] : devices_) {
    const Device& d = *held.device;
    DeviceView view{name, {}, &held.used};
    for (uint8_t p = 1; p <= d.port_count() && p != 0; ++p) {
      const bool ethernet = d.port_ethernet(p);
      // An excluded port is reported as such: its state and GID are not read.
      if (!port_selected(filter, p, ethernet)) {
        view.ports.push_back({p, ethernet, false, std::nullopt});
        continue;
      }
      auto info = d.port(p, options_.gid_index);
      view.ports.push_back(
          {p, ethernet, d.port_active(p), info ? std::optional<PortInfo>(*info) : std::nullopt});
    }
    views.push_back(std::move(view));
  }
  std::vector<ChosenPort> previous;
  for (const auto& p : ports_) previous.push_back({p.device->name(), p.info, p.rail});
  PortSelection selected = select_ports(views, filter, interface_addresses(), previous);
  std::vector<LocalPort> ports;
  for (ChosenPort& c : selected.ports) {
    ports.push_back(LocalPort{devices_.at(c.device).device, std::move(c.info), c.rail});
  }
  std::vector<PortReport> reports = std::move(selected.reports);
  std::vector<DeviceReport> devices;
  for (const auto& [name, state] : states_) {
    DeviceReport r{name, state, false, false};
    if (auto it = devices_.find(name); it != devices_.end()) {
      r.thread_domain = it->second.device->thread_domain();
      r.timestamps = it->second.device->completion_timestamps();
    }
    devices.push_back(std::move(r));
  }
  stats_->set_local(std::move(devices), std::move(reports), options_.memory);
  if (ports.empty()) {
    std::string problem = "no RDMA port to probe from";
    if (!failed_.empty()) problem += " (" + failed_.begin()->second + ")";
    health_.set_device_problem(problem);
  } else {
    health_.set_device_problem("");
  }
  attach_ud(ports);
  if (!same_ports(ports, ports_)) set_ports(std::move(ports));
}

void ProbeService::attach_ud(std::vector<LocalPort>& ports) {
  std::vector<std::shared_ptr<UdPortStats>> keep;
  for (LocalPort& p : ports) {
    for (const auto& old : ports_) {
      if (old.device == p.device && old.info.port == p.info.port && old.info.gid == p.info.gid &&
          old.ud && old.ud->working()) {
        p.ud = old.ud;
      }
    }
    auto stats =
        stats_->ud_port({{"device", p.device->name()}, {"port", std::to_string(p.info.port)}});
    keep.push_back(stats);
    if (p.ud) continue;
    UdPortSettings us;
    us.max_size = std::min<uint32_t>(p.info.active_mtu, 4096);
    us.recv_depth = kUdQueueDepth;
    us.send_depth = kUdQueueDepth;
    us.memory = options_.memory;
    us.gid_index = options_.gid_index;
    auto ud = UdPort::create(io_, p, us, stats);
    if (!ud) {
      if (ud_failed_[p.name()] != ud.error().message) {
        log::warn(
            "probe: no UD queue pair; UD probes from and to the port fail with reason "
            "\"setup\"",
            {{"port", p.name()}, {"err", ud.error().message}});
      }
      ud_failed_[p.name()] = ud.error().message;
      continue;
    }
    ud_failed_.erase(p.name());
    p.ud = std::shared_ptr<UdPort>(std::move(ud.value()));
  }
  stats_->retain_ud_ports(keep);
}

void ProbeService::set_ports(std::vector<LocalPort> ports) {
  ports_ = std::move(ports);
  responder_->set_ports(ports_);
  apply();
}

void ProbeService::watch_events(const std::string& name) {
  auto it = devices_.find(name);
  if (it == devices_.end()) return;
  Held& held = it->second;
  if (!held.events) {
    held.events.emplace(io_, held.device->async_fd());
  }
  std::weak_ptr<Device> device = held.device;
  held.events->async_wait(
      boost::asio::posix::stream_descriptor::wait_read,
      [this, name, device](const boost::system::error_code& ec) {
        if (ec) return;
        auto found = devices_.find(name);
        if (found == devices_.end() || found->second.device != device.lock()) return;
        const auto events = found->second.device->take_events();
        if (std::find(events.begin(), events.end(), DeviceEvent::fatal) != events.end()) {
          release(name, "fatal_event");
          return scan_soon();
        }
        if (std::find(events.begin(), events.end(), DeviceEvent::ports) != events.end()) {
          scan_soon();
        }
        watch_events(name);
      });
}

void ProbeService::release(const std::string& name, const std::string& why) {
  auto it = devices_.find(name);
  if (it == devices_.end()) return;
  log::warn(why == "excluded" ? "probe: releasing the device; its ports stop probing"
                              : "probe: releasing the device; its ports stop probing until it "
                                "returns",
            {{"device", name}, {"reason", why}});
  it->second.events.reset();
  std::shared_ptr<Device> device = std::move(it->second.device);
  devices_.erase(it);
  states_[name] = device_state::gone;
  stats_->device_released(name, why);
  std::vector<LocalPort> ports;
  for (const auto& p : ports_) {
    if (p.device != device) ports.push_back(p);
  }
  // Probers and sessions on the device stop now; their handlers finish on
  // the loop, and the last of them closes the device.
  set_ports(std::move(ports));
}

void ProbeService::refresh_files() {
  bool changed = false;
  for (const auto& path : options_.file_sd) {
    FileState& f = files_[path];
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      const std::string problem = "file_sd " + path + ": " + std::strerror(errno);
      if (!f.missing) {
        log::warn("probe: file_sd keeps its targets", {{"path", path}, {"err", problem}});
      }
      health_.set_file_sd_problem(path, problem);
      stats_->file_sd_read(false);
      f.missing = true;
      f.seen = false;
      continue;
    }
    f.missing = false;
    if (f.seen && same_file(f.st, st)) continue;
    f.seen = true;
    f.st = st;
    if (static_cast<std::size_t>(st.st_size) > kMaxFileSdBytes) {
      const std::string problem = "file_sd " + path + ": " + std::to_string(st.st_size) +
                                  " bytes, more than the " + std::to_string(kMaxFileSdBytes) +
                                  " a target list may have";
      log::error("probe: file_sd keeps its previous targets", {{"path", path}, {"err", problem}});
      health_.set_file_sd_problem(path, problem);
      stats_->file_sd_read(false);
      continue;
    }
    auto text = read_file(path, kMaxFileSdBytes, "reading " + path);
    auto parsed = text ? parse_file_sd(*text, path) : Result<std::vector<Target>>(text.error());
    if (!parsed) {
      const std::string problem = "file_sd: " + parsed.error().message;
      log::error("probe: file_sd keeps its previous targets", {{"path", path}, {"err", problem}});
      health_.set_file_sd_problem(path, problem);
      stats_->file_sd_read(false);
      continue;
    }
    health_.set_file_sd_problem(path, "");
    stats_->file_sd_read(true);
    f.targets = std::move(parsed.value());
    changed = true;
  }
  if (changed || watched_.empty()) apply();
  if (!options_.file_sd.empty()) {
    files_timer_.expires_after(options_.file_sd_refresh);
    files_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) refresh_files();
    });
  }
}

void ProbeService::apply() {
  // Every target wanted now, as a host.
  std::vector<Target> from_files;
  for (const auto& path : options_.file_sd) {
    if (const auto f = files_.find(path); f != files_.end()) {
      from_files.insert(from_files.end(), f->second.targets.begin(), f->second.targets.end());
    }
  }
  WantedTargets wanted = wanted_targets(options_.targets, from_files);
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
  for (const auto& p : ports_) rails.push_back(p.rail);
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
      w.discovery = std::make_shared<Discovery>(io_, w.address, ds, discovery_handlers(key));
      w.discovery->start();
    }
    const auto c = pick.chosen.find(w.address);
    w.rails = c == pick.chosen.end() ? std::set<std::string>{} : c->second;
    keep_targets.push_back(w.stats);
  }
  stats_->retain_targets(keep_targets);
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
  ps.device_suspect = [this] { scan_soon(); };

  const std::vector<ProbeClass> classes = effective_classes(options_);
  std::vector<PlanPort> plan_ports;
  for (const auto& p : ports_) {
    plan_ports.push_back({{p.device->name(), p.info.port, p.rail},
                          p.info.gid,
                          reinterpret_cast<std::uintptr_t>(p.ud.get())});
  }
  std::vector<PlanTarget> plan_targets;
  for (const auto& [key, w] : watched_) {
    plan_targets.push_back({w.address, w.name, w.target, w.ports, w.rails});
  }
  const auto planned = plan_probers({plan_ports, plan_targets, classes, options_.cross_rail,
                                     options_.pinglist.group_label, self_group});
  std::map<ProberKey, std::shared_ptr<ControlClient>> next;
  std::vector<std::shared_ptr<SeriesStats>> keep;
  std::vector<std::shared_ptr<HistogramStats>> keep_histograms;
  for (const PlannedProber& plan : planned) {
    const LocalPort& local = ports_[plan.local];
    const PlanTarget& target = plan_targets[plan.target];
    const wire::PortAd& remote = target.ports[plan.remote];
    const ProbeClass& cls = classes[plan.cls];
    std::shared_ptr<SeriesStats> series;
    UdProberStats ud_stats;
    if (cls.op == Op::ud) {
      series = stats_->series(plan.key.labels, SeriesShape{options_.histograms == "target", false});
      ud_stats = ud_histograms(local, cls, plan.scope, keep_histograms);
      ud_stats.pair = series;
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
    if (cls.op == Op::ud) {
      p = std::make_shared<UdProber>(io_, local, local.ud, target.address, remote, cls, ps,
                                     ud_stats);
    } else {
      p = std::make_shared<Prober>(io_, local, target.address, remote, cls, ps, series);
    }
    p->start();
    next[plan.key] = std::move(p);
  }
  for (auto& [key, p] : probers_) p->stop();
  probers_ = std::move(next);
  stats_->retain(keep);
  stats_->retain_histograms(keep_histograms);
}

UdProberStats ProbeService::ud_histograms(const LocalPort& local, const ProbeClass& cls,
                                          const char* scope,
                                          std::vector<std::shared_ptr<HistogramStats>>& keep) {
  const bool device_clock = local.ud && local.ud->timestamps();
  Labels port_labels = {{"device", local.device->name()},
                        {"port", std::to_string(local.info.port)},
                        {"rail", local.rail},
                        {"op", op_name(cls.op)},
                        {"size", std::to_string(cls.size)},
                        {"tclass", std::to_string(cls.tclass)},
                        {"clock", device_clock ? "device" : "host"}};
  UdProberStats ud;
  ud.responder_delay =
      stats_->histogram("rdma_probe_responder_delay_seconds", kResponderDelayHelp, port_labels);
  keep.push_back(ud.responder_delay);
  if (device_clock) {
    ud.prober_delay =
        stats_->histogram("rdma_probe_prober_delay_seconds", kProberDelayHelp, port_labels);
    keep.push_back(ud.prober_delay);
  }
  Labels group_labels = port_labels;
  group_labels.emplace_back("scope", scope);
  ud.latency =
      stats_->histogram("rdma_probe_group_latency_seconds", kGroupLatencyHelp, group_labels);
  keep.push_back(ud.latency);
  return ud;
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
