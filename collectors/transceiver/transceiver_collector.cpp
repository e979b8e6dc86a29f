#include "collectors/transceiver/transceiver_collector.hpp"

#include <yaml-cpp/yaml.h>

#include "collectors/registry.hpp"
#include "common/log.hpp"

namespace rdma_exporter {
namespace {

using module_eeprom::Module;
using module_eeprom::Thresholds;

// The kernel lets only CAP_NET_ADMIN read module memory (MODULE_EEPROM_GET
// and the legacy ioctls alike).
bool refused(const Error& e) {
  return e.code == EPERM || e.code == EACCES;
}

void add_thresholds(MetricSink& sink, const Labels& labels, const std::string& name,
                    const std::string& what, const Thresholds& t) {
  const std::string help = "The module's own " + what +
                           " thresholds (level: high_alarm, low_alarm, high_warning, "
                           "low_warning), from its memory map.";
  for (const auto& [level, value] :
       {std::pair<const char*, const std::optional<double>*>{"high_alarm", &t.high_alarm},
        {"low_alarm", &t.low_alarm},
        {"high_warning", &t.high_warning},
        {"low_warning", &t.low_warning}}) {
    if (!*value) continue;
    Labels l = labels;
    l.emplace_back("level", level);
    sink.gauge(name, help, std::move(l), **value);
  }
}

void add_lane(MetricSink& sink, const Labels& labels, std::size_t lane, const std::string& name,
              const char* help, const std::optional<double>& value) {
  if (!value) return;
  Labels l = labels;
  l.emplace_back("lane", std::to_string(lane));
  sink.gauge(name, help, std::move(l), *value);
}

void add_module(MetricSink& sink, const Labels& labels, const Module& m) {
  Labels info = labels;
  info.emplace_back("type", m.type);
  info.emplace_back("standard", m.standard);
  info.emplace_back("vendor", m.vendor);
  info.emplace_back("part_number", m.part_number);
  info.emplace_back("serial_number", m.serial_number);
  info.emplace_back("revision", m.revision);
  sink.info("rdma_transceiver_info",
            "The pluggable module (optic or cable) of the network device behind the RDMA port: "
            "its type (SFF-8024 identifier), the standard of its memory map, vendor, part and "
            "serial number, and revision; the value is always 1.",
            std::move(info));
  if (m.temperature_celsius) {
    sink.gauge("rdma_transceiver_temperature_celsius", "The module's temperature.", labels,
               *m.temperature_celsius);
  }
  if (m.supply_voltage_volts) {
    sink.gauge("rdma_transceiver_supply_voltage_volts", "The module's supply voltage.", labels,
               *m.supply_voltage_volts);
  }
  for (std::size_t lane = 0; lane < m.lanes.size(); ++lane) {
    const module_eeprom::Lane& l = m.lanes[lane];
    add_lane(sink, labels, lane, "rdma_transceiver_rx_power_watts",
             "Optical power the module receives on the lane (average or OMA, as the module "
             "measures it).",
             l.rx_power_watts);
    add_lane(sink, labels, lane, "rdma_transceiver_tx_power_watts",
             "Optical power the module sends on the lane.", l.tx_power_watts);
    add_lane(sink, labels, lane, "rdma_transceiver_tx_bias_amperes",
             "Bias current of the module's transmitter laser on the lane.", l.tx_bias_amperes);
  }
  add_thresholds(sink, labels, "rdma_transceiver_temperature_threshold_celsius", "temperature",
                 m.temperature_thresholds);
  add_thresholds(sink, labels, "rdma_transceiver_supply_voltage_threshold_volts", "supply voltage",
                 m.supply_voltage_thresholds);
  add_thresholds(sink, labels, "rdma_transceiver_rx_power_threshold_watts", "receive power",
                 m.rx_power_thresholds);
  add_thresholds(sink, labels, "rdma_transceiver_tx_power_threshold_watts", "transmit power",
                 m.tx_power_thresholds);
  add_thresholds(sink, labels, "rdma_transceiver_tx_bias_threshold_amperes", "laser bias",
                 m.tx_bias_thresholds);
  for (const module_eeprom::Flag& f : m.flags) {
    Labels l = labels;
    l.emplace_back("flag", f.name);
    l.emplace_back("lane", f.lane ? std::to_string(*f.lane) : "");
    sink.gauge("rdma_transceiver_flag",
               "A flag the module raised in its latest read (temperature_high_alarm, "
               "rx_power_low_warning, rx_los, tx_fault, ...), on a lane or (lane empty) the whole "
               "module; SFF-8636 and CMIS modules latch flags until they are read. Always 1; "
               "flags not raised have no series.",
               std::move(l), 1);
  }
}

}  // namespace

TransceiverCollector::TransceiverCollector(netlink::Transport* generic, ethtool::Ioctl* ioctl,
                                           const TransceiverOptions& options, bool background)
    : reader_(generic, ioctl), background_(background), interval_(options.interval) {
  if (background_) thread_ = std::thread([this] { run(); });
}

TransceiverCollector::~TransceiverCollector() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool TransceiverCollector::reconfigure(const std::any& options) {
  {
    std::lock_guard lock(mutex_);
    interval_ = std::any_cast<const TransceiverOptions&>(options).interval;
  }
  wake_.notify_all();
  return true;
}

bool TransceiverCollector::wait_for_reads(uint64_t reads, Duration limit) {
  std::unique_lock lock(mutex_);
  return read_.wait_for(lock, limit, [&] { return reads_ >= reads; });
}

TransceiverCollector::Entry TransceiverCollector::read_one(const std::string& netdev) {
  Entry e;
  e.read_at = std::chrono::system_clock::now();
  e.read_steady = std::chrono::steady_clock::now();
  auto r = reader_.read(netdev);
  e.duration_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - e.read_steady).count();
  if (!r) {
    if (refused(r.error())) {
      e.refused = true;
    } else if (!ethnl::not_available(r.error())) {
      e.problems.push_back(r.error().message);
    }
    return e;
  }
  e.problems = std::move(r->problems);
  auto m = module_eeprom::decode(r->image);
  if (!m) {
    e.problems.push_back(m.error().message);
    return e;
  }
  e.module = std::move(m).value();
  for (const std::string& half : e.module->missing) {
    // A half that failed to read is named by the reader already.
    bool named = false;
    for (const std::string& p : e.problems) named = named || p.starts_with(half + ":");
    if (!named) e.problems.push_back(half + ": not read");
  }
  return e;
}

void TransceiverCollector::store(const std::string& netdev, Entry e) {
  if (e.refused || e.module || !e.problems.empty()) {
    if (permitted_ != !e.refused) {
      if (e.refused) {
        // Said once, not warned: the default service runs without
        // capabilities, and reading modules is what it then gives up.
        log::info(
            "transceiver module reads are not permitted: the kernel lets only CAP_NET_ADMIN "
            "read module memory",
            {{"netdev", netdev}});
      } else if (permitted_) {
        log::info("transceiver module reads are permitted again", {{"netdev", netdev}});
      }
    }
    permitted_ = !e.refused;
  }
  const bool attempted = e.module || !e.problems.empty();
  if (attempted) {
    Health& h = health_[netdev];
    std::string problems;
    for (const std::string& p : e.problems) problems += (problems.empty() ? "" : "; ") + p;
    if (!e.problems.empty()) ++h.failures;
    h.consecutive = e.module ? 0 : std::min(h.consecutive + 1, 3U);
    if (problems != h.logged) {
      if (problems.empty()) {
        log::info("transceiver module read again", {{"netdev", netdev}});
      } else {
        log::warn(e.module ? "transceiver module read in part" : "transceiver module read failed",
                  {{"netdev", netdev}, {"err", problems}});
      }
      h.logged = problems;
    }
  }
  cache_[netdev] = std::move(e);
  ++reads_;
  read_.notify_all();
}

std::chrono::steady_clock::time_point TransceiverCollector::next_read(const std::string& netdev,
                                                                      const Entry& e) const {
  // After whole failures in a row: 2, 4, then 8 intervals apart.
  auto h = health_.find(netdev);
  const unsigned backoff = h == health_.end() ? 1U : 1U << h->second.consecutive;
  return e.read_steady + interval_ * backoff;
}

std::vector<std::string> TransceiverCollector::due(
    std::chrono::steady_clock::time_point now) const {
  std::vector<std::string> out;
  for (const std::string& netdev : wanted_) {
    auto it = cache_.find(netdev);
    if (it == cache_.end() || next_read(netdev, it->second) <= now) out.push_back(netdev);
  }
  return out;
}

void TransceiverCollector::run() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    const auto now = std::chrono::steady_clock::now();
    const std::vector<std::string> netdevs = due(now);
    if (netdevs.empty()) {
      // Until the next read falls due, or a collection brings a new netdev.
      auto next = now + interval_ * 8;
      for (const std::string& netdev : wanted_) {
        auto it = cache_.find(netdev);
        if (it != cache_.end()) next = std::min(next, next_read(netdev, it->second));
      }
      wake_.wait_until(lock, next);
      continue;
    }
    for (const std::string& netdev : netdevs) {
      lock.unlock();
      Entry e = read_one(netdev);
      lock.lock();
      if (stop_) return;
      store(netdev, std::move(e));
    }
  }
}

std::vector<std::string> TransceiverCollector::collect(Scrape& scrape, MetricSink& sink) {
  std::vector<std::string> errors;
  const Topology* topology = scrape.topology_for(errors);
  if (topology == nullptr) return errors;
  std::set<std::string> netdevs;
  for_each_port(*topology, [&](const PortRef& p) {
    if (const std::string* netdev = p.netdev()) netdevs.insert(*netdev);
  });
  std::map<std::string, Entry> entries;
  std::map<std::string, Health> health;
  std::optional<bool> permitted;
  if (background_) {
    {
      std::lock_guard lock(mutex_);
      const bool grew = std::any_of(netdevs.begin(), netdevs.end(),
                                    [&](const std::string& n) { return !cache_.contains(n); });
      wanted_ = netdevs;
      std::erase_if(cache_, [&](const auto& kv) { return !netdevs.contains(kv.first); });
      std::erase_if(health_, [&](const auto& kv) { return !netdevs.contains(kv.first); });
      entries = cache_;
      health = health_;
      permitted = permitted_;
      if (grew) wake_.notify_all();
    }
  } else {
    std::lock_guard lock(mutex_);
    wanted_ = netdevs;
    std::erase_if(cache_, [&](const auto& kv) { return !netdevs.contains(kv.first); });
    std::erase_if(health_, [&](const auto& kv) { return !netdevs.contains(kv.first); });
    for (const std::string& netdev : due(std::chrono::steady_clock::now())) {
      store(netdev, read_one(netdev));
    }
    entries = cache_;
    health = health_;
    permitted = permitted_;
  }
  for_each_port(*topology, [&](const PortRef& p) {
    const std::string* netdev = p.netdev();
    if (netdev == nullptr) return;
    Labels labels = p.labels();
    labels.emplace_back("netdev", *netdev);
    if (auto h = health.find(*netdev); h != health.end()) {
      sink.counter("rdma_transceiver_read_failures_total",
                   "Reads of the module that failed, whole or in part (the exporter logs what "
                   "failed when it changes): a module that does not answer, an empty cage on "
                   "drivers that answer EIO for one, a page it did not give.",
                   labels, static_cast<double>(h->second.failures));
    }
    auto it = entries.find(*netdev);
    if (it == entries.end() || !it->second.module) return;
    const Entry& e = it->second;
    add_module(sink, labels, *e.module);
    sink.gauge("rdma_transceiver_read_timestamp_seconds",
               "When the module's series were read (modules are read on their own schedule, "
               "transceiver.interval, not at each scrape).",
               labels, std::chrono::duration<double>(e.read_at.time_since_epoch()).count());
    sink.gauge("rdma_transceiver_read_duration_seconds",
               "How long the module's latest read took (two-wire bus transfers in the driver).",
               labels, e.duration_seconds);
  });
  if (permitted) {
    sink.gauge("rdma_exporter_transceiver_reads_permitted",
               "1 when the kernel lets the exporter read module memory, 0 when it refuses "
               "(module reads need CAP_NET_ADMIN): then the transceiver collector exports no "
               "module.",
               {}, *permitted ? 1 : 0);
  }
  return errors;
}

namespace {

void parse_transceiver_options(Walker& w, const YAML::Node& node, const std::string& path,
                               TransceiverOptions& o) {
  w.mapping(node, path, {{"interval", w.duration(o.interval)}});
}

std::vector<std::string> validate_transceiver_options(const TransceiverOptions& o) {
  // At most a day: the reading thread waits up to 8 intervals after
  // failures, and that must stay a time the clock can hold.
  if (o.interval < std::chrono::seconds(1) || o.interval > std::chrono::hours(24)) {
    return {"transceiver.interval: must be from 1s to 24h"};
  }
  return {};
}

}  // namespace

CollectorEntry transceiver_entry() {
  CollectorEntry e;
  e.name = "transceiver";
  e.help =
      "Identity, temperature, voltage, per lane receive and transmit power and laser bias, "
      "thresholds and flags of the pluggable module behind each RoCE port, read on their own "
      "schedule.";
  set_options<TransceiverOptions>(e, parse_transceiver_options, validate_transceiver_options);
  e.make = [](const CollectorContext& c) {
    return std::make_unique<TransceiverCollector>(
        c.kernel.module_generic.get(), c.kernel.module_ioctl.get(),
        std::any_cast<const TransceiverOptions&>(c.options), !c.one_collection);
  };
  return e;
}

}  // namespace rdma_exporter
