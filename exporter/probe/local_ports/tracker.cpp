#include "exporter/probe/local_ports/tracker.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>

#include "common/log.hpp"
#include "exporter/probe/plan/rails.hpp"
#include "exporter/probe/verbs/memory.hpp"

namespace rdma_exporter::probe {
namespace {

// How often the device list and the ports are looked at.
constexpr std::chrono::seconds kScanInterval{2};
// Ports are looked at on every port event and at least every 15 scans (30 s).
constexpr unsigned kPortRefreshScans = 15;

bool same_ports(const std::vector<LocalPort>& a, const std::vector<LocalPort>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
    return x.device == y.device && x.info.port == y.info.port && x.info.gid == y.info.gid &&
           x.rail == y.rail && x.ud == y.ud;
  });
}

Pattern device_pattern(const DeviceSettings& s) {
  return s.device.empty() ? Pattern() : Pattern::checked(s.device);
}

}  // namespace

DeviceTracker::DeviceTracker(boost::asio::io_context& io, std::shared_ptr<ProbeStats> stats,
                             ProbeHealth& health, DeviceSettings settings, Hooks hooks)
    : io_(io),
      stats_(std::move(stats)),
      health_(health),
      settings_(std::move(settings)),
      pattern_(device_pattern(settings_)),
      hooks_(std::move(hooks)) {}

void DeviceTracker::configure(DeviceSettings settings) {
  settings_ = std::move(settings);
  pattern_ = device_pattern(settings_);
  // A reload forgets the devices that left and did not come back.
  std::erase_if(states_, [](const auto& kv) { return kv.second == device_state::gone; });
  ports_dirty_ = true;
  scan();
}

void DeviceTracker::stop() {
  timer_.cancel();
  for (auto& [name, held] : devices_) held.events.reset();
}

void DeviceTracker::close() {
  ports_.clear();
  devices_.clear();
}

void DeviceTracker::scan_soon() {
  ports_dirty_ = true;
  if (scan_queued_) return;
  scan_queued_ = true;
  boost::asio::post(io_, [this] {
    scan_queued_ = false;
    scan();
  });
}

void DeviceTracker::scan() {
  timer_.expires_after(kScanInterval);
  timer_.async_wait([this](const boost::system::error_code& ec) {
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
  track(list.value());
  use_ports();
}

DeviceChanges device_changes(const std::vector<DeviceId>& list, const Pattern& pattern,
                             const std::map<std::string, uint64_t>& open,
                             const std::map<std::string, std::string>& states) {
  DeviceChanges changes;
  std::set<std::string> listed;
  for (const DeviceId& id : list) {
    listed.insert(id.name);
    const auto held = open.find(id.name);
    if (!pattern.matches(id.name)) {
      if (held != open.end()) changes.release.push_back({id.name, "excluded"});
      changes.excluded.push_back(id.name);
      continue;
    }
    if (held == open.end()) {
      changes.open.push_back(id);
    } else if (held->second != id.guid) {
      changes.release.push_back({id.name, "replaced"});
      changes.open.push_back(id);
    } else {
      changes.kept.push_back(id.name);
    }
  }
  for (const auto& [name, guid] : open) {
    if (!listed.contains(name)) changes.release.push_back({name, "removed"});
  }
  for (const auto& [name, state] : states) {
    if (!listed.contains(name) && state != device_state::gone && !open.contains(name)) {
      changes.forget.push_back(name);
    }
  }
  return changes;
}

void DeviceTracker::track(const std::vector<DeviceId>& list) {
  std::map<std::string, uint64_t> open_now;
  for (const auto& [name, held] : devices_) open_now.emplace(name, held.device->guid());
  const DeviceChanges changes = device_changes(list, pattern_, open_now, states_);
  for (const auto& r : changes.release) release(r.name, r.why);
  for (const auto& name : changes.excluded) states_[name] = device_state::excluded;
  for (const auto& name : changes.kept) states_[name] = device_state::in_use;
  for (const DeviceId& id : changes.open) {
    if (open(id)) states_[id.name] = device_state::in_use;
  }
  for (const auto& name : changes.forget) {
    failed_.erase(name);
    states_.erase(name);
  }
}

bool DeviceTracker::open(const DeviceId& id) {
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
    return false;
  }
  failed_.erase(id.name);
  Held held;
  held.device = std::move(device.value());
  const Device& d = *held.device;
  // Memory is made per session; trying one buffer now turns a device or
  // kernel that cannot register this kind into one clear line.
  if (auto trial = Memory::create(d, 64, settings_.memory); !trial) {
    const std::string problem = "probe.memory " + settings_.memory + " cannot be used on " +
                                d.name() + ": " + trial.error().message;
    log::error("probe: memory cannot be used; every probe session will fail with reason \"setup\"",
               {{"device", d.name()}, {"err", problem}});
    health_.set_memory_problem(problem);
  }
  const bool back = states_[id.name] == device_state::gone;
  log::info(back ? "probe: using the device again" : "probe: using the device",
            {{"device", d.name()},
             {"pd", d.thread_domain() ? "thread domain" : "plain PD"},
             {"timestamps", d.completion_timestamps() ? "completion timestamps" : "host clock"}});
  devices_.emplace(id.name, std::move(held));
  watch_events(id.name);
  return true;
}

void DeviceTracker::use_ports() {
  // The ports: every port of an open device that passes the filters and
  // was once seen active with a GID.
  const PortFilter& filter = settings_.ports;
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
      auto info = d.port(p, settings_.gid_index);
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
    ports.push_back(LocalPort{devices_.at(c.device).device, c.info, c.rail});
  }
  std::vector<DeviceReport> devices;
  for (const auto& [name, state] : states_) {
    DeviceReport r{name, state, false, false};
    if (auto it = devices_.find(name); it != devices_.end()) {
      r.thread_domain = it->second.device->thread_domain();
      r.timestamps = it->second.device->completion_timestamps();
    }
    devices.push_back(std::move(r));
  }
  stats_->set_local(std::move(devices), std::move(selected.reports), settings_.memory);
  if (ports.empty()) {
    std::string problem = "no RDMA port to probe from";
    if (!failed_.empty()) problem += " (" + failed_.begin()->second + ")";
    health_.set_device_problem(problem);
  } else {
    health_.set_device_problem("");
  }
  if (hooks_.attach) hooks_.attach(ports, ports_);
  if (!same_ports(ports, ports_)) set_ports(std::move(ports));
}

void DeviceTracker::set_ports(std::vector<LocalPort> ports) {
  ports_ = std::move(ports);
  if (hooks_.changed) hooks_.changed();
}

void DeviceTracker::watch_events(const std::string& name) {
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

void DeviceTracker::release(const std::string& name, const std::string& why) {
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

}  // namespace rdma_exporter::probe
