#include "common/kernel/netdev/net_reader.hpp"

#include <charconv>
#include <system_error>

#include "common/kernel/sys/reader.hpp"

namespace rdma_exporter::sysfs {
namespace fs = std::filesystem;

namespace {

// Reads one unsigned value; `gone` turns true when the file says its device
// was removed. Absent files and EINVAL (the carrier of a device that is
// down) leave `out` unset quietly.
void read_number(AttributeFile& file, std::optional<uint64_t>& out, ReadNotes& notes, bool& gone) {
  auto text = file.read();
  if (!text) {
    const int code = text.error().code;
    if (code == ENODEV || code == ESTALE) {
      gone = true;
    } else if (code == EINVAL) {
      ++notes.unavailable;
    } else if (code != ENOENT) {
      notes.problems.push_back(text.error().message);
    }
    return;
  }
  uint64_t value = 0;
  const char* last = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), last, value);
  if (ec != std::errc() || ptr != last || text->empty()) {
    notes.problems.push_back("read " + file.path().string() + ": not a number: \"" +
                             text->substr(0, 40) + "\"");
    return;
  }
  out = value;
}

}  // namespace

std::optional<Carrier> NetReader::read_carrier(const std::string& netdev, ReadNotes& notes) {
  if (!is_plain_name(netdev)) return std::nullopt;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const fs::path dir = class_dir_ / netdev;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      entries_.erase(netdev);
      return std::nullopt;
    }
    auto it = entries_.find(netdev);
    if (it == entries_.end()) {
      it = entries_
               .emplace(netdev, Entry{AttributeFile(dir / "carrier"),
                                      AttributeFile(dir / "carrier_up_count"),
                                      AttributeFile(dir / "carrier_down_count")})
               .first;
    }
    ReadNotes these;
    bool gone = false;
    Carrier c;
    std::optional<uint64_t> carrier;
    read_number(it->second.carrier, carrier, these, gone);
    read_number(it->second.up_count, c.up_changes, these, gone);
    read_number(it->second.down_count, c.down_changes, these, gone);
    if (gone) {
      entries_.erase(it);  // the device was made again: its new files
      continue;
    }
    if (carrier) {
      if (*carrier > 1) {
        these.problems.push_back("read " + (dir / "carrier").string() +
                                 ": not 0 or 1: " + std::to_string(*carrier));
      } else {
        c.up = *carrier == 1;
      }
    }
    notes.unavailable += these.unavailable;
    notes.problems.insert(notes.problems.end(), these.problems.begin(), these.problems.end());
    return c;
  }
  return std::nullopt;  // gone twice in a row: removed while read
}

void NetReader::keep_only(const std::set<std::string>& netdevs) {
  std::erase_if(entries_, [&](const auto& e) { return netdevs.count(e.first) == 0; });
}

}  // namespace rdma_exporter::sysfs
