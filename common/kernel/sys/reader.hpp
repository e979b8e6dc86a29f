#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/kernel/sys/attribute_file.hpp"
#include "common/kernel/sys/model.hpp"
#include "common/kernel/sys/pci_function.hpp"
#include "common/result.hpp"

namespace rdma_exporter::sysfs {

// Reads /sys/class/infiniband below a configurable root (the real /sys, a
// fixture tree in tests, a host mount in a container).
//
// The files of a device are found once (its discovery) and kept open
// (AttributeFile): later reads re-read them with pread. A device is
// discovered again when its directory is no longer the one discovered
// (another inode, or a changed mtime or ctime: the device was removed and
// added again, renamed, or its entries changed), when a kept file answers
// that it is gone (ENODEV, ENOENT, ESTALE: the kernel removed it), and a
// device that device_names() no longer lists is forgotten, its files closed.
// One collection at a time: the reader is not thread-safe.
class Reader {
 public:
  explicit Reader(const std::filesystem::path& sysfs_root);
  ~Reader();
  Reader(Reader&&) noexcept;
  Reader& operator=(Reader&&) noexcept;

  // The names under <root>/class/infiniband, sorted. An absent directory is
  // an empty list: the host has no RDMA devices (or no RDMA at all).
  Result<std::vector<std::string>> device_names() const;
  bool class_dir_exists() const;

  // Reads one device. Never fails as a whole: what could not be read is
  // skipped and described in `notes`. Empty when the device is gone (it was
  // removed since it was listed, or its entry is a dangling link).
  std::optional<Device> read_device(const std::string& name, ReadNotes& notes) const;

  // The port numbers under <dev>/ports, sorted; empty when the device or its
  // ports directory is absent.
  std::vector<uint32_t> port_numbers(const std::string& device, ReadNotes& notes) const;

  // The driver's counters of one port, <dev>/ports/<port>/hw_counters/, as
  // the kernel names them, without "lifespan" (a setting, not a counter).
  // The kernel lists every hw counter of the port there except optional
  // counters, and gives the values rdma netlink's RDMA_NLDEV_CMD_STAT_GET
  // gives. Empty when the port has no hw_counters directory (the driver has
  // no port counters, or the device or port is gone).
  std::optional<std::vector<Counter>> port_hw_counters(const std::string& device, uint32_t port,
                                                       ReadNotes& notes) const;

  // The PCI function behind a device: <dev>/device when its subsystem is
  // pci. Its link is read from the physical function for a virtual function
  // (<function>/physfn). Files the function lacks (a conventional PCI
  // device, no AER capability) are left out quietly. Empty when the device
  // has no PCI function (Soft-RoCE, a device on another bus) or is gone.
  std::optional<PciFunction> read_pci_function(const std::string& name, ReadNotes& notes) const;

  const std::filesystem::path& class_dir() const { return class_dir_; }

  // Devices discovered and kept (tests).
  std::size_t cached_devices() const;

 private:
  struct Cache;
  std::filesystem::path class_dir_;
  std::unique_ptr<Cache> cache_;  // what was discovered; reads go through it
};

// Parses sysfs "rate" text ("100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)") into
// bytes per second.
std::optional<double> parse_rate(const std::string& text);

// A name the kernel could have given a device or netdev: a name with a
// slash, or "." or "..", must never lead a read outside its class directory.
bool is_plain_name(const std::string& name);

// Reads a small sysfs file (at most 4 KiB) whole; trailing newline trimmed.
Result<std::string> read_attribute(const std::filesystem::path& file);

}  // namespace rdma_exporter::sysfs
