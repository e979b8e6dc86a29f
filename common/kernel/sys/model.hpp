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

// A PCI function's link (pci-sysfs: current_link_speed, current_link_width,
// max_link_speed, max_link_width). Values the kernel gives as unknown
// ("Unknown" speed, width 0) are left unset.
struct PciLink {
  std::optional<double> speed_transfers_per_second;  // "16.0 GT/s PCIe": 16e9
  std::optional<double> max_speed_transfers_per_second;
  std::optional<uint32_t> width_lanes;
  std::optional<uint32_t> max_width_lanes;
};

// One AER file (aer_dev_correctable, aer_dev_nonfatal, aer_dev_fatal): a
// line per error the kernel names, "<name> <count>", the name as the kernel
// spells it ("RxErr", or "Receiver Error" before Linux 5.1), and the
// TOTAL_ERR_* line: the error messages the function sent, one of which may
// report several errors.
struct AerCounts {
  std::vector<Counter> errors;
  std::optional<uint64_t> messages;
};

// The PCI function behind an RDMA device (<dev>/device, on the pci bus).
struct PciFunction {
  std::string address;  // "0000:3b:00.0"
  // A virtual function's physical function ("" for any other): a virtual
  // function has no link of its own, `link` is the physical function's.
  std::string physical_function;
  PciLink link;
  // Absent when the function has no AER capability or the kernel predates
  // the AER statistics (4.19).
  std::optional<AerCounts> correctable, nonfatal, fatal;
};

// What a read of one device met besides values: values the kernel declined
// to give (EINVAL, "N/A (no PMA)", ...), which are skipped quietly, and
// problems (unexpected errors, unparsable content), which are reported.
struct ReadNotes {
  std::size_t unavailable = 0;
  std::vector<std::string> problems;
};

}  // namespace rdma_exporter::sysfs
