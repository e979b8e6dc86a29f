#pragma once

// The PCI function behind an RDMA device: <dev>/device, when its subsystem
// is pci. Its link (speed and width, current and maximum) is read from the
// physical function for a virtual function (<function>/physfn), its AER
// counts from the function itself.

#include <filesystem>
#include <optional>
#include <string>

#include "common/kernel/sys/attribute_file.hpp"
#include "common/kernel/sys/model.hpp"
#include "common/result.hpp"

namespace rdma_exporter::sysfs {

// The files of one PCI function, found once and kept open (AttributeFile).
class PciFunctionFiles {
 public:
  // The function <device_dir>/device leads to; found() is false when there
  // is none (Soft-RoCE, a device on another bus) or the link dangles.
  static PciFunctionFiles discover(const std::filesystem::path& device_dir);

  bool found() const { return found_; }

  // Reads the link and the AER counts. Files the function lacks (a
  // conventional PCI device, no AER capability) are left out quietly; what
  // could not be read is described in `notes`; `gone` turns true when a
  // file says the device was removed.
  PciFunction read(ReadNotes& notes, bool& gone);

 private:
  bool found_ = false;
  std::string address_;
  std::string physical_function_;
  AttributeFile speed_, max_speed_, width_, max_width_;
  AttributeFile correctable_, nonfatal_, fatal_;
};

// Parses a PCIe link speed ("16.0 GT/s PCIe", "8 GT/s" before Linux 5.x)
// into transfers per second; empty for "Unknown" and anything unparsable.
std::optional<double> parse_pcie_speed(const std::string& text);

// Parses an AER statistics file. Lines that are not "<name> <count>" make
// it fail with the first such line quoted.
Result<AerCounts> parse_aer_counts(const std::string& text);

}  // namespace rdma_exporter::sysfs
