#include "collectors/qp_counters/qp_counters_collector.hpp"

#include <rdma/rdma_netlink.h>

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "collectors/qp_counters/mode_manager.hpp"
#include "collectors/registry.hpp"
#include "common/kernel/nldev/counter_codec.hpp"
#include "common/kubernetes/pod_directory.hpp"

namespace rdma_exporter {
namespace {

constexpr const char* kOverflow = "__overflow__";

SeriesBook::Key overflow_key(const SeriesBook::Key& key) {
  SeriesBook::Key out(key.size());
  out[0] = key[0];
  out[1] = key[1];
  if (out.size() > 2) out[2] = kOverflow;
  return out;
}

bool wants(const std::vector<std::string>& dims, const char* dim) {
  return std::find(dims.begin(), dims.end(), dim) != dims.end();
}

// Moves `from`'s items to the end of `to` (the whole vector when `to` is empty).
template <typename T>
void append(std::vector<T>& to, std::vector<T>&& from) {
  if (to.empty()) {
    to = std::move(from);
    return;
  }
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

// Errors with which kernels without per-QP counters (before 5.3) answer.
bool unsupported(const Error& e) {
  return e.code == EOPNOTSUPP || e.code == EINVAL;
}

}  // namespace

QpCountersCollector::QpCountersCollector(const QpCountersOptions& options)
    : options_(options),
      manager_(options),
      processes_(options.proc_root),
      book_(options.max_series, options.retired_ttl) {
  choose_labels();
}

bool QpCountersCollector::reconfigure(const std::any& any_options) {
  const auto& options = std::any_cast<const QpCountersOptions&>(any_options);
  const auto old_labels = label_names_;
  options_ = options;
  manager_.reconfigure(options);
  processes_ = ProcessInfo(options.proc_root);
  choose_labels();
  if (label_names_ != old_labels) {
    book_ = SeriesBook(options.max_series, options.retired_ttl);
  } else {
    book_.set_limits(options.max_series, options.retired_ttl);
  }
  return true;
}

void QpCountersCollector::choose_labels() {
  with_type_ = with_pid_ = with_comm_ = true;
  with_cgroup_ = false;
  const auto& agg = options_.aggregate_by;
  if (!agg.empty()) {
    with_type_ = wants(agg, "qp_type");
    with_pid_ = false;
    with_comm_ = wants(agg, "comm");
    with_cgroup_ = wants(agg, "cgroup");
    with_pod_ = pods_present_ && wants(agg, "pod");
  } else {
    with_cgroup_ = options_.cgroup_label;
    with_pod_ = pods_present_;
  }
  label_names_ = {"device", "port"};
  if (with_type_) label_names_.emplace_back("qp_type");
  if (with_pid_) label_names_.emplace_back("pid");
  if (with_comm_) label_names_.emplace_back("comm");
  if (with_cgroup_) label_names_.emplace_back("cgroup");
  if (with_pod_) {
    label_names_.emplace_back("namespace");
    label_names_.emplace_back("pod");
    label_names_.emplace_back("container");
  }
}

// One value that all of a set's QPs share, if they share one.
template <typename T>
class Common {
 public:
  void add(const T& v) {
    if (!seen_) {
      value_ = v;
      seen_ = true;
    } else if (!(value_ == v)) {
      several_ = true;
    }
  }
  bool empty() const { return !seen_; }
  // The value when exactly one distinct value was seen.
  std::optional<T> only() const {
    return seen_ && !several_ ? std::optional<T>(value_) : std::nullopt;
  }

 private:
  T value_{};
  bool seen_ = false;
  bool several_ = false;
};

SeriesBook::Key QpCountersCollector::key_of(const nldev::CounterSet& set,
                                            const std::vector<const nldev::Qp*>& qps,
                                            kubernetes::PodDirectory* pods) {
  // The set's own criteria first; otherwise what all its QPs have in common.
  std::optional<uint8_t> type = set.qp_type;
  std::optional<uint32_t> pid = set.pid;
  std::optional<std::string> kern = set.kern_name;
  Common<uint8_t> types;
  Common<uint32_t> pids;
  Common<std::string> kerns;
  for (const nldev::Qp* q : qps) {
    types.add(q->type);
    if (q->pid) pids.add(*q->pid);
    if (q->kern_name) kerns.add(*q->kern_name);
  }
  if (!type) type = types.only();
  if (!pid && !kern && kerns.empty()) pid = pids.only();
  if (!pid && !kern && pids.empty()) kern = kerns.only();

  SeriesBook::Key key;
  key.reserve(label_names_.size());
  key.push_back(set.dev_name);
  key.push_back(std::to_string(set.port));
  if (with_type_) key.push_back(type ? nldev::qp_type_name(*type) : "");
  if (with_pid_) key.push_back(pid ? std::to_string(*pid) : "");
  if (with_comm_) {
    std::string comm;
    if (kern)
      comm = *kern;
    else if (pid)
      comm = processes_.comm(*pid).value_or("");
    key.push_back(comm);
  }
  if (with_cgroup_) key.push_back(pid ? processes_.cgroup(*pid).value_or("") : "");
  if (with_pod_) {
    std::optional<kubernetes::PodLabels> pod;
    if (pid && pods != nullptr) {
      if (const auto cgroup = processes_.cgroup(*pid)) pod = pods->lookup(*cgroup);
    }
    key.push_back(pod ? pod->pod_namespace : "");
    key.push_back(pod ? pod->pod : "");
    key.push_back(pod ? pod->container : "");
  }
  return key;
}

void QpCountersCollector::follow_pod_directory(const kubernetes::PodDirectory* pods) {
  // The pod labels come and go with the directory (a reload of the
  // kubernetes section): the series start afresh with the other labels.
  if (const bool present = pods != nullptr; present != pods_present_) {
    pods_present_ = present;
    const auto old_labels = label_names_;
    choose_labels();
    if (label_names_ != old_labels) book_ = SeriesBook(options_.max_series, options_.retired_ttl);
  }
}

QpCountersCollector::KernelView QpCountersCollector::read_kernel(Scrape& scrape,
                                                                 const Topology& topology,
                                                                 MetricSink& sink,
                                                                 std::vector<std::string>& errors) {
  KernelView view;
  for (const auto& entry : topology.devices) {
    const auto& dev = entry.device;
    if (!entry.ports) continue;
    for (const auto& port : *entry.ports) {
      auto mode = scrape.netlink().counter_mode(dev.index, port.index);
      if (!mode) {
        if (!unsupported(mode.error())) {
          errors.push_back(dev.name + " port " + std::to_string(port.index) +
                           " counter mode: " + mode.error().message);
        }
        continue;
      }
      sink.info(
          "rdma_qp_stat_mode_info",
          "How the port groups QPs into counter sets: mode none, auto or manual, and the "
          "auto criteria; the value is always 1.",
          {{"device", dev.name},
           {"port", std::to_string(port.index)},
           {"mode", nldev::counter_mode_name(mode->mode)},
           {"auto_by",
            mode->mode == RDMA_COUNTER_MODE_AUTO ? nldev::auto_mask_name(mode->auto_mask) : ""}});
      view.live_sets[{dev.name, port.index}] = 0;
    }

    auto qps = scrape.netlink().qps(dev.index);
    if (!qps) {
      if (!unsupported(qps.error())) errors.push_back(dev.name + " QPs: " + qps.error().message);
    } else {
      append(view.qps, std::move(*qps));
    }
    auto sets = scrape.netlink().counter_sets(dev.index);
    if (!sets) {
      if (!unsupported(sets.error())) {
        errors.push_back(dev.name + " counter sets: " + sets.error().message);
      }
      continue;
    }
    append(view.sets, std::move(*sets));
  }

  return view;
}

void QpCountersCollector::export_counter_sets(KernelView& view, kubernetes::PodDirectory* pods,
                                              MetricSink& sink) {
  std::vector<SeriesBook::Observation> observations;
  // QPs by device and number, sorted (one allocation, where a hash map
  // makes one per QP); a number listed twice is the last one's.
  using QpRef = std::pair<uint64_t, const nldev::Qp*>;
  auto dev_qpn = [](uint32_t dev, uint32_t lqpn) { return (uint64_t{dev} << 32) | lqpn; };
  std::vector<QpRef> by_dev_qpn;
  by_dev_qpn.reserve(view.qps.size());
  for (const auto& q : view.qps) by_dev_qpn.emplace_back(dev_qpn(q.dev_index, q.lqpn), &q);
  std::stable_sort(by_dev_qpn.begin(), by_dev_qpn.end(),
                   [](const QpRef& a, const QpRef& b) { return a.first < b.first; });
  auto find_qp = [&](uint64_t key) -> const nldev::Qp* {
    auto it = std::upper_bound(by_dev_qpn.begin(), by_dev_qpn.end(), key,
                               [](uint64_t k, const QpRef& r) { return k < r.first; });
    if (it == by_dev_qpn.begin() || std::prev(it)->first != key) return nullptr;
    return std::prev(it)->second;
  };
  std::vector<SeriesBook::Key> keys;
  keys.reserve(view.sets.size());
  std::vector<const nldev::Qp*> qps_of_set;
  for (const auto& s : view.sets) {
    qps_of_set.clear();
    for (uint32_t lqpn : s.lqpns) {
      if (const nldev::Qp* q = find_qp(dev_qpn(s.dev_index, lqpn))) qps_of_set.push_back(q);
    }
    keys.push_back(key_of(s, qps_of_set, pods));
    ++view.live_sets[{s.dev_name, s.port}];
  }
  for (std::size_t i = 0; i < view.sets.size(); ++i) {
    const auto& s = view.sets[i];
    observations.push_back({{s.dev_name, s.port, s.id}, keys[i], &s.counters});
  }

  const auto series = book_.update(observations, overflow_key, SeriesBook::Clock::now());
  for (const auto& s : series) {
    Labels labels;
    for (std::size_t i = 0; i < label_names_.size(); ++i)
      labels.emplace_back(label_names_[i], s.key[i]);
    for (const auto& [name, value] : s.values) {
      const auto& [metric, help] = stat_names(name);
      sink.counter(metric, help, labels, value);
    }
  }
  for (const auto& [port, count] : view.live_sets) {
    const Labels labels{{"device", port.first}, {"port", std::to_string(port.second)}};
    sink.gauge("rdma_qp_stat_sets", "Per-QP counter sets bound on the port.", labels,
               static_cast<double>(count));
    auto folded = book_.folded().find(port);
    sink.gauge("rdma_qp_stat_overflow_sets",
               "Counter sets folded into the port's overflow series because "
               "qp_counters.max_series distinct series exist.",
               labels, folded == book_.folded().end() ? 0.0 : static_cast<double>(folded->second));
  }
}

void QpCountersCollector::export_inventory(const std::vector<nldev::Qp>& qps,
                                           kubernetes::PodDirectory* pods, MetricSink& sink) {
  // QP inventory: counted by device, port, type, state (and comm, and the
  // pod) first, then labelled once per group.
  const bool by_pod = options_.inventory_by_pod && pods != nullptr;
  struct Group {
    uint32_t dev_index;
    std::optional<uint32_t> port;
    uint8_t type;
    uint8_t state;
    std::string comm;
    kubernetes::PodLabels pod;
    bool operator==(const Group&) const = default;
  };
  struct GroupHash {
    std::size_t operator()(const Group& g) const {
      std::size_t h = std::hash<std::string>{}(g.comm);
      for (const std::string* v : {&g.pod.pod_namespace, &g.pod.pod, &g.pod.container}) {
        h = h * 1000003U ^ std::hash<std::string>{}(*v);
      }
      for (uint64_t v : {uint64_t{g.dev_index}, uint64_t{g.port.value_or(0xffffffffU)},
                         uint64_t{g.type}, uint64_t{g.state}}) {
        h = h * 1000003U ^ std::hash<uint64_t>{}(v);
      }
      return h;
    }
  };
  std::unordered_map<Group, std::pair<const nldev::Qp*, std::size_t>, GroupHash> groups;
  for (const auto& q : qps) {
    Group g{q.dev_index, q.port, q.type, q.state, {}, {}};
    if (options_.inventory_by_comm) {
      g.comm = q.kern_name ? *q.kern_name : (q.pid ? processes_.comm(*q.pid).value_or("") : "");
    }
    if (by_pod && q.pid) {
      if (const auto cgroup = processes_.cgroup(*q.pid)) {
        if (auto pod = pods->lookup(*cgroup)) g.pod = std::move(*pod);
      }
    }
    auto [it, inserted] = groups.try_emplace(std::move(g), &q, 0);
    ++it->second.second;
  }
  std::map<std::vector<std::string>, std::size_t> inventory;
  for (const auto& [g, first_and_count] : groups) {
    const nldev::Qp& q = *first_and_count.first;
    std::vector<std::string> key{q.dev_name, q.port ? std::to_string(*q.port) : "",
                                 nldev::qp_type_name(q.type), nldev::qp_state_name(q.state)};
    if (options_.inventory_by_comm) key.push_back(g.comm);
    if (by_pod) {
      key.push_back(g.pod.pod_namespace);
      key.push_back(g.pod.pod);
      key.push_back(g.pod.container);
    }
    inventory[std::move(key)] += first_and_count.second;
  }
  for (const auto& [key, count] : inventory) {
    Labels labels{{"device", key[0]}, {"port", key[1]}, {"qp_type", key[2]}, {"state", key[3]}};
    std::size_t next = 4;
    if (options_.inventory_by_comm) labels.emplace_back("comm", key[next++]);
    if (by_pod) {
      labels.emplace_back("namespace", key[next]);
      labels.emplace_back("pod", key[next + 1]);
      labels.emplace_back("container", key[next + 2]);
    }
    sink.gauge("rdma_qps", "QPs in the device's resource tracker, by port, type and state.",
               std::move(labels), static_cast<double>(count));
  }
}

std::vector<std::string> QpCountersCollector::collect(Scrape& scrape, MetricSink& sink) {
  std::vector<std::string> errors;
  const Topology* topology = scrape.topology_for(errors);
  if (topology == nullptr) return errors;
  processes_.next_collection(ProcessInfo::Clock::now());
  follow_pod_directory(scrape.pods());
  KernelView view = read_kernel(scrape, *topology, sink, errors);
  export_counter_sets(view, scrape.pods(), sink);
  export_inventory(view.qps, scrape.pods(), sink);
  manager_.add_metrics(sink);
  return errors;
}

const std::pair<std::string, std::string>& QpCountersCollector::stat_names(
    const std::string& counter) {
  auto it = stat_names_.find(counter);
  if (it != stat_names_.end()) return it->second;
  return stat_names_
      .emplace(counter,
               std::make_pair("rdma_qp_stat_" + sanitize_metric_fragment(counter) + "_total",
                              "Counter \"" + counter +
                                  "\" of per-QP counter sets, summed over the sets of the "
                                  "series. Already included in the port's rdma_port_hw_* "
                                  "totals."))
      .first->second;
}

CollectorEntry qp_counters_entry() {
  CollectorEntry e;
  e.name = "qp_counters";
  e.help =
      "Per-process and per-QP-type traffic and errors from the kernel's per-QP counter sets, "
      "counter modes and the QP inventory, through rdma netlink.";
  set_options<QpCountersOptions>(e, parse_qp_counters_options, validate_qp_counters_options);
  e.privilege_problems = [](const std::any& options, const Privileges& have) {
    std::vector<std::string> out;
    if (std::any_cast<const QpCountersOptions&>(options).writes() && !have.cap_net_admin) {
      out.emplace_back(
          "qp_counters.ports asks for auto or manual counter modes, but this process lacks "
          "CAP_NET_ADMIN: those kernel writes will fail with EPERM (reading still works)");
    }
    if (!have.host_pid_namespace) {
      out.emplace_back(
          "not in the host pid namespace: per-QP counter sets and QPs of processes in other "
          "namespaces cannot be attributed to them (pid and comm labels stay empty)");
    }
    return out;
  };
  e.make = [](const CollectorContext& c) {
    return std::make_unique<QpCountersCollector>(
        std::any_cast<const QpCountersOptions&>(c.options));
  };
  return e;
}

}  // namespace rdma_exporter
