#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collectors/collector.hpp"
#include "collectors/qp_counters/mode_manager.hpp"
#include "collectors/qp_counters/options.hpp"
#include "collectors/qp_counters/process_info.hpp"
#include "collectors/qp_counters/series_book.hpp"

namespace rdma_exporter {

// Per-QP counter sets (RDMA_NLDEV_CMD_STAT_GET dump with STAT_RES=RES_QP),
// the ports' counter modes, and the QP inventory (RDMA_NLDEV_CMD_RES_QP_GET):
//   rdma_qp_stat_<name>_total{device,port,qp_type,pid,comm[,cgroup][,namespace,pod,container]}
//   rdma_qp_stat_sets, rdma_qp_stat_overflow_sets, rdma_qp_stat_mode_info,
//   rdma_qps{device,port,qp_type,state[,comm]}
// and, when the exporter manages counter modes (its CounterModeManager),
// the manager's outcomes.
// Counter set values are never added to port totals: the kernel's port
// counters already include them.
class QpCountersCollector final : public Collector {
 public:
  explicit QpCountersCollector(const QpCountersOptions& options);
  std::string_view name() const override { return "qp_counters"; }

  // A new configuration (reload). Series keep their values unless the label
  // dimensions changed (aggregate_by, cgroup_label): then they start afresh.
  // The manager keeps its bindings and write counts.
  bool reconfigure(const std::any& options) override;
  KernelStateManager* manager() override { return &manager_; }
  std::vector<std::string> collect(Scrape& scrape, MetricSink& sink) override;

 private:
  // What one collection read of the kernel: every counter set and QP, and
  // the ports whose counter mode was read (with their sets, counted later).
  struct KernelView {
    std::vector<nldev::CounterSet> sets;
    std::vector<nldev::Qp> qps;
    std::map<std::pair<std::string, uint32_t>, std::size_t> live_sets;
  };

  void choose_labels();
  // Chooses the labels again when the pod directory came or went.
  void follow_pod_directory(const kubernetes::PodDirectory* pods);
  // Reads each port's counter mode (rdma_qp_stat_mode_info), and each
  // device's QPs and counter sets.
  KernelView read_kernel(Scrape& scrape, const Topology& topology, MetricSink& sink,
                         std::vector<std::string>& errors);
  // rdma_qp_stat_* per series of the book, and the sets per port.
  void export_counter_sets(KernelView& view, kubernetes::PodDirectory* pods, MetricSink& sink);
  // rdma_qps: the QPs counted by device, port, type, state (comm, pod).
  void export_inventory(const std::vector<nldev::Qp>& qps, kubernetes::PodDirectory* pods,
                        MetricSink& sink);
  // `qps`: the set's QPs found in the QP dump.
  SeriesBook::Key key_of(const nldev::CounterSet& set, const std::vector<const nldev::Qp*>& qps,
                         kubernetes::PodDirectory* pods);
  // Metric name and HELP text of a per-QP counter, made once per name.
  const std::pair<std::string, std::string>& stat_names(const std::string& counter);

  QpCountersOptions options_;
  CounterModeManager manager_;
  ProcessInfo processes_;
  SeriesBook book_;
  std::vector<std::string> label_names_;  // device, port, then the chosen dimensions
  std::unordered_map<std::string, std::pair<std::string, std::string>> stat_names_;
  bool with_type_ = true, with_pid_ = true, with_comm_ = true, with_cgroup_ = false;
  // namespace, pod, container: when the collection has a pod directory
  // (`kubernetes.enabled`), and aggregate_by, if set, names pod.
  bool with_pod_ = false;
  bool pods_present_ = false;
};

}  // namespace rdma_exporter
