#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "common/kernel/sys/attribute_file.hpp"
#include "common/kernel/sys/model.hpp"

namespace rdma_exporter::sysfs {

// The carrier of a network device (/sys/class/net/<netdev>/): whether it is
// up now, and how often it came up and went down since the device was made,
// which counts a flap that begins and ends between two reads.
struct Carrier {
  std::optional<bool> up;                // carrier; unset while the device is down (EINVAL)
  std::optional<uint64_t> up_changes;    // carrier_up_count (Linux 4.16 and later)
  std::optional<uint64_t> down_changes;  // carrier_down_count
};

// Reads the carrier files of network devices below <root>/class/net, kept
// open between reads (AttributeFile). A device whose files say it is gone
// (ENODEV: removed, or made again under the same name) is looked up again
// at once. One collection at a time.
class NetReader {
 public:
  explicit NetReader(const std::filesystem::path& sysfs_root)
      : class_dir_(sysfs_root / "class" / "net") {}

  // Empty when the device is not there (gone, or in another network
  // namespace). A device without the count files (before Linux 4.16) has
  // them unset.
  std::optional<Carrier> read_carrier(const std::string& netdev, ReadNotes& notes);

  // Closes the files of the devices not in `netdevs`.
  void keep_only(const std::set<std::string>& netdevs);

  std::size_t cached_devices() const { return entries_.size(); }

 private:
  struct Entry {
    AttributeFile carrier, up_count, down_count;
  };
  std::filesystem::path class_dir_;
  std::map<std::string, Entry> entries_;
};

}  // namespace rdma_exporter::sysfs
