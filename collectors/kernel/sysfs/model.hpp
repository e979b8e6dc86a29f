#pragma once

// Plain structs read from /sys/class/infiniband. No Prometheus types here.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rdma_exporter::sysfs {

struct Counter {
  std::string name;  // the file name, as the kernel spells it
  uint64_t value = 0;
};

struct Port {
  uint32_t index = 0;
  std::optional<double> rate_bytes_per_second;  // from "100 Gb/sec (4X EDR)"
  std::optional<std::string> link_layer;        // "InfiniBand", "Ethernet"
  bool has_pma = false;                         // ports/<n>/counters/ exists
  std::vector<Counter> pma_counters;            // raw values as the kernel reports them
};

struct Device {
  std::string name;
  std::optional<std::string> fw_ver;
  std::optional<std::string> board_id;
  std::optional<std::string> hca_type;
  std::optional<std::string> node_desc;
  std::vector<Counter> hw_counters;  // device-level hw_counters/, without "lifespan"
  std::vector<Port> ports;
};

// What a read of one device met besides values: values the kernel declined
// to give (EINVAL, "N/A (no PMA)", ...), which are skipped quietly, and
// problems (unexpected errors, unparsable content), which are reported.
struct ReadNotes {
  std::size_t unavailable = 0;
  std::vector<std::string> problems;
};

}  // namespace rdma_exporter::sysfs
