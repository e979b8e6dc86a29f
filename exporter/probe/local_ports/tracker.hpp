#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/pattern.hpp"
#include "exporter/probe/local_ports/local_port.hpp"
#include "exporter/probe/local_ports/ports.hpp"
#include "exporter/probe/stats/health.hpp"
#include "exporter/probe/stats/stats.hpp"
#include "exporter/probe/verbs/borrowed_fd.hpp"
#include "exporter/probe/verbs/device.hpp"

namespace rdma_exporter::probe {

// What the tracker opens and which of its ports it uses.
struct DeviceSettings {
  std::string device;  // a pattern of device names; empty: every device
  PortFilter ports;
  std::string memory = "host";  // tried once per device opened
  int gid_index = -1;
};

// What one look at the device list changes, given the devices open now
// (name -> GUID) and the state of every device seen before: pure, so the
// tracker's rules are tested without devices or an event loop.
struct DeviceChanges {
  struct Release {
    std::string name;
    std::string why;  // excluded, replaced or removed
    bool operator==(const Release&) const = default;
  };
  std::vector<Release> release;       // in list order, then the removed by name
  std::vector<std::string> excluded;  // listed, not matching probe.device
  std::vector<DeviceId> open;         // listed, matching, not open (or replaced)
  std::vector<std::string> kept;      // listed, matching, open with the same GUID
  // Devices not listed any more whose state goes: those that left while
  // not in use. A device that left while in use stays "gone".
  std::vector<std::string> forget;
};
DeviceChanges device_changes(const std::vector<DeviceId>& list, const Pattern& pattern,
                             const std::map<std::string, uint64_t>& open,
                             const std::map<std::string, std::string>& states);

// The devices the probe uses and their ports, on the probe's loop.
//
// The device list is looked at every 2 s (and at once on a port or fatal
// event, or when asked after verbs failed with EIO or ENODEV), the ports on
// every event and at least every 30 s. A device that left is released at
// once (its context's events no longer watched, its ports dropped, so the
// sessions on it end and the kernel can finish removing it); one that comes
// back with the same name is used again.
class DeviceTracker {
 public:
  struct Hooks {
    // Gives each port of `ports` its UD queue pair; `previous` are the
    // ports in use until now.
    std::function<void(std::vector<LocalPort>& ports, const std::vector<LocalPort>& previous)>
        attach;
    // The ports in use changed (ports() holds them).
    std::function<void()> changed;
  };

  DeviceTracker(boost::asio::io_context& io, std::shared_ptr<ProbeStats> stats, ProbeHealth& health,
                DeviceSettings settings, Hooks hooks);

  // A reload: new settings, the devices that left and did not come back
  // forgotten, and the devices and ports looked at now.
  void configure(DeviceSettings settings);
  // Looks at the devices now and every 2 s after.
  void scan();
  // Looks at the devices and ports soon (a verbs call failed, an event).
  void scan_soon();
  // Stops looking; the devices stay open until close().
  void stop();
  // Drops every device and port (after the loop stopped).
  void close();

  const std::vector<LocalPort>& ports() const { return ports_; }

 private:
  // An opened device.
  struct Held {
    std::shared_ptr<Device> device;
    BorrowedFd events;       // the device context's asynchronous events
    std::set<uint8_t> used;  // ports seen active with a GID: probing from them
  };

  // Opens the devices listed that pass the pattern, releases those gone,
  // excluded or replaced, and keeps each one's state.
  void track(const std::vector<DeviceId>& list);
  // Opens one device; false when it cannot be opened now.
  bool open(const DeviceId& id);
  // The ports of the open devices to use: reported, given UD queue pairs,
  // and handed on when they changed.
  void use_ports();
  void watch_events(const std::string& name);
  void release(const std::string& name, const std::string& why);
  void set_ports(std::vector<LocalPort> ports);

  boost::asio::io_context& io_;
  std::shared_ptr<ProbeStats> stats_;
  ProbeHealth& health_;
  DeviceSettings settings_;
  Pattern pattern_;
  Hooks hooks_;
  boost::asio::steady_timer timer_{io_};
  std::map<std::string, Held> devices_;        // by name
  std::map<std::string, std::string> states_;  // device_state of every device seen, by name
  std::map<std::string, std::string> failed_;  // why each failed device cannot be opened
  std::vector<LocalPort> ports_;               // in use, by device and port
  bool scan_queued_ = false;
  std::vector<std::string> last_entries_;  // uverbs devices at the last full scan
  bool ports_dirty_ = true;                // a port event or a reload: look at the ports
  unsigned quiet_scans_ = 0;               // scans since the last full one
};

}  // namespace rdma_exporter::probe
